"""Statistics and run order shared by the benchmark runners (bench/scripts)."""
import statistics


def rotation(impls, r):
    """The order of implementations in repeat r: rotated by one each repeat (A B C, B C A, ...)."""
    k = r % len(impls)
    return impls[k:] + impls[:k]


def median(xs):
    """Median of the values that are not None, or None when there are none."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def paired_ratio(numerators, denominators):
    """Median over repeats of numerator/denominator, pairing the same repeat index (both > 0).
    Returns (median or None, the per-repeat ratios)."""
    ratios = [n / d for n, d in zip(numerators, denominators)
              if n is not None and d is not None and n > 0 and d > 0]
    return (statistics.median(ratios) if ratios else None), ratios


def fmt(v, spec="%.1f"):
    """`v` formatted with `spec`, or n/a for a missing value."""
    return "n/a" if v is None else spec % v


def select_scenarios(ap, all_scenarios, only):
    """The scenarios whose keys are in `only` (all when it is empty); an unknown key is a usage
    error reported through the argparse parser `ap`."""
    keys = [sc["key"] for sc in all_scenarios]
    for k in only:
        if k not in keys:
            ap.error("unknown scenario %r" % k)
    return [sc for sc in all_scenarios if not only or sc["key"] in only]


def keep_run(runs, scenario, impl, repeat, rec, log):
    """Files one run's record under runs[scenario][impl] and logs its error ('!') or warning
    ('?'). True when the run produced a figure."""
    rec["repeat"] = repeat
    runs[scenario][impl].append(rec)
    if "error" in rec:
        log("  ! %s repeat %d: %s" % (impl, repeat + 1, rec["error"]))
        return False
    if "warning" in rec:
        log("  ? %s repeat %d: %s" % (impl, repeat + 1, rec["warning"]))
    return True
