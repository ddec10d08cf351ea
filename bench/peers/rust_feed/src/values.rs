// Redis text read as the registry's types, and numbers written as rankd writes them: the value
// rules of docs/engine.md ("Values from Redis", "Responses") for the feed plan's keys. Pure
// functions, no state.

/// An int: an optional `-` and 1 to 19 ASCII digits, within int64; anything else is None.
pub fn parse_int(text: &[u8]) -> Option<i64> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // The bytes are ASCII digits, so they are UTF-8; parse fails only past int64.
    std::str::from_utf8(text).ok()?.parse::<i64>().ok()
}

/// A float: decimal syntax only, `[-+]?(D+(.D*)?|.D+)([eE][-+]?D+)?`, finite after parsing (so
/// `inf`, `nan` and `1e400` are None; `1e-400` is 0).
pub fn parse_float(text: &[u8]) -> Option<f64> {
    if !is_decimal(text) {
        return None;
    }
    let value = std::str::from_utf8(text).ok()?.parse::<f64>().ok()?;
    value.is_finite().then_some(value)
}

fn is_decimal(text: &[u8]) -> bool {
    let mut i = usize::from(matches!(text.first(), Some(b'+' | b'-')));
    let digits_from = |i: usize| text[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let whole = digits_from(i);
    i += whole;
    let mut fraction = 0;
    if text.get(i) == Some(&b'.') {
        i += 1;
        fraction = digits_from(i);
        i += fraction;
    }
    if whole == 0 && fraction == 0 {
        return false;
    }
    if matches!(text.get(i), Some(b'e' | b'E')) {
        i += 1;
        i += usize::from(matches!(text.get(i), Some(b'+' | b'-')));
        let exponent = digits_from(i);
        if exponent == 0 {
            return false;
        }
        i += exponent;
    }
    i == text.len()
}

/// A string: valid UTF-8, else None.
pub fn parse_string(text: Vec<u8>) -> Option<String> {
    String::from_utf8(text).ok()
}

/// The elements of a list that are ints, in order (the others are dropped).
pub fn int_ids(list: Vec<Option<Vec<u8>>>) -> Vec<i64> {
    list.iter()
        .filter_map(|e| e.as_deref().and_then(parse_int))
        .collect()
}

/// A finite float as ECMAScript's Number::toString writes it (the shortest digits that read back
/// to the same float64; -0 as 0), which is how rankd writes floats in JSON.
pub fn push_number(out: &mut String, value: f64) {
    debug_assert!(value.is_finite());
    if value == 0.0 {
        out.push('0');
        return;
    }
    if value < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` without a precision writes the shortest round-trip digits: d[.ddd]e[-]X.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} writes an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().expect("{:e} writes an integer exponent");
    let k = digits.len() as i32;
    let n = exponent + 1; // the decimal point sits after n digits
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_follow_the_registry_rule() {
        assert_eq!(parse_int(b"007"), Some(7));
        assert_eq!(parse_int(b"-0"), Some(0));
        assert_eq!(parse_int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"+7"[..],
            b" 7",
            b"7.0",
            b"1e3",
            b"9223372036854775808",
            b"",
            b"-",
            b"12345678901234567890",
        ] {
            assert_eq!(parse_int(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats_take_decimal_syntax_only() {
        assert_eq!(parse_float(b"3"), Some(3.0));
        assert_eq!(parse_float(b".5"), Some(0.5));
        assert_eq!(parse_float(b"5."), Some(5.0));
        assert_eq!(parse_float(b"1E-2"), Some(0.01));
        assert_eq!(parse_float(b"-1.5e+2"), Some(-150.0));
        assert_eq!(parse_float(b"1e-400"), Some(0.0));
        for bad in [
            &b"inf"[..],
            b"nan",
            b"0x1p3",
            b" 1",
            b"1e400",
            b".",
            b"1e",
            b"e5",
            b"",
            b"+",
        ] {
            assert_eq!(parse_float(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn strings_must_be_utf8() {
        assert_eq!(parse_string(b"clip 1".to_vec()).as_deref(), Some("clip 1"));
        assert_eq!(parse_string(vec![0xED, 0xA0, 0x80]), None);
    }

    #[test]
    fn lists_keep_their_int_elements() {
        let list = vec![
            Some(b"3".to_vec()),
            Some(b"x".to_vec()),
            None,
            Some(b"-2".to_vec()),
        ];
        assert_eq!(int_ids(list), vec![3, -2]);
    }

    #[test]
    fn numbers_are_written_as_ecmascript_does() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (1.75, "1.75"),
            (3.0, "3"),
            (-2.5, "-2.5"),
            (100.0, "100"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (123456.789, "123456.789"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
        ];
        for (value, want) in cases {
            let mut out = String::new();
            push_number(&mut out, value);
            assert_eq!(out, want, "{value:?}");
        }
    }
}
