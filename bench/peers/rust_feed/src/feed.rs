// The feed plan (plans/feed.plan.ts) by hand: its params, its Redis reads in three waves of
// pipelines on one multiplexed connection, its score, filter and top 50, and the rows' JSON.
// `Feed` is shared by every runtime thread (Arc); the connection is a cheap clone per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::try_join;
use redis::aio::MultiplexedConnection;
use redis::{RedisResult, Value};
use regex::{Regex, RegexBuilder};
use serde_json::Value as Json;

use crate::values::{int_ids, parse_float, parse_int, parse_string, push_number};

// The plan's fan-outs and top-k, and the features it reads (plans/feed.plan.ts).
const FOLLOW_FANOUT: isize = 100;
const MEDIA_FANOUT: isize = 10;
const TOP_K: usize = 50;
const FEATURES: [&str; 5] = ["author_id", "age_hours", "likes", "ctr", "title"];
// A compiled blocklist regex may use at most this much memory (rankd's RE2 budget).
const REGEX_SIZE_LIMIT: usize = 1 << 20;
const REGEX_CACHE_ENTRIES: usize = 256;

/// A request that cannot be served as asked (answered 400 with this message).
#[derive(Debug)]
pub struct BadRequest(pub String);

/// The plan's params after a request's overrides (plans/feed.plan.ts, registry/params.toml).
pub struct Params {
    like_weight: f64,
    recency_weight: f64,
    min_score: f64,
    blocklist: Arc<Regex>,
}

/// One ranked media item: the keys the plan has at its `top` node, in the registry's order.
pub struct Row {
    id: i64,
    author_id: Option<i64>,
    age_hours: Option<f64>,
    likes: Option<i64>,
    ctr: Option<f64>,
    title: Option<String>,
    final_score: f64,
}

/// The plan and what it reads with. Thread-safe: the cache of requests' own blocklist regexes
/// is behind a mutex (a request without one never takes it).
pub struct Feed {
    redis: MultiplexedConnection,
    default_blocklist: Arc<Regex>,
    regexes: Mutex<HashMap<String, Arc<Regex>>>,
}

const DEFAULT_BLOCKLIST: &str = "[^\\s\\S]";

impl Feed {
    pub fn new(redis: MultiplexedConnection) -> Self {
        let default_blocklist =
            Arc::new(compile(DEFAULT_BLOCKLIST).expect("the plan's default blocklist compiles"));
        Feed {
            redis,
            default_blocklist,
            regexes: Mutex::new(HashMap::new()),
        }
    }

    /// The defaults with `overrides` (absent, or a JSON object of declared params) applied.
    pub fn bind_params(&self, overrides: Option<&Json>) -> Result<Params, BadRequest> {
        let mut params = Params {
            like_weight: 0.5,
            recency_weight: 0.05,
            min_score: 0.0,
            blocklist: self.default_blocklist.clone(),
        };
        let Some(overrides) = overrides else {
            return Ok(params);
        };
        let Some(overrides) = overrides.as_object() else {
            return Err(BadRequest("params must be an object".into()));
        };
        for (name, value) in overrides {
            let (slot, min, max) = match name.as_str() {
                "like_weight" => (&mut params.like_weight, 0.0, 100.0),
                "recency_weight" => (&mut params.recency_weight, 0.0, 10.0),
                "min_score" => (&mut params.min_score, -1000.0, 1000.0),
                "blocklist_regex" => {
                    let pattern = value.as_str().ok_or_else(|| wrong_type(name))?;
                    params.blocklist = self.regex(pattern)?;
                    continue;
                }
                _ => return Err(BadRequest(format!("unknown param {name}"))),
            };
            let number = value.as_f64().ok_or_else(|| wrong_type(name))?;
            if !(min..=max).contains(&number) {
                return Err(BadRequest(format!("param {name} is out of bounds")));
            }
            *slot = number;
        }
        Ok(params)
    }

    fn regex(&self, pattern: &str) -> Result<Arc<Regex>, BadRequest> {
        let mut cache = self
            .regexes
            .lock()
            .expect("the regex cache's lock is never poisoned");
        if let Some(re) = cache.get(pattern) {
            return Ok(re.clone());
        }
        let re = Arc::new(compile(pattern)?);
        if cache.len() >= REGEX_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), re.clone());
        Ok(re)
    }

    /// The viewer's top 50: three waves of Redis reads, then score, filter and top-k.
    pub async fn rank(&self, viewer_id: u64, params: &Params) -> RedisResult<Vec<Row>> {
        // Wave 1: the viewer's hash (its keys are not used by the rest of the plan) and follows.
        let mut wave1 = redis::pipe();
        wave1.cmd("HGETALL").arg(format!("user:{viewer_id}"));
        wave1
            .cmd("LRANGE")
            .arg(format!("follow:{viewer_id}"))
            .arg(0)
            .arg(FOLLOW_FANOUT - 1);
        let (_viewer, follows): (Value, Vec<Option<Vec<u8>>>) =
            wave1.query_async(&mut self.redis.clone()).await?;
        let followees = int_ids(follows);

        // Wave 2: every followee's hash and recent media, as two pipelines sent together; wave 3,
        // the media's features, goes out as soon as the media lists are in, without waiting for
        // the hashes (which the plan reads but does not use).
        let mut hashes = redis::pipe();
        let mut lists = redis::pipe();
        for f in &followees {
            hashes.cmd("HGETALL").arg(format!("user:{f}"));
            lists
                .cmd("LRANGE")
                .arg(format!("media:{f}"))
                .arg(0)
                .arg(MEDIA_FANOUT - 1);
        }
        let media_and_features = async {
            let lists: Vec<Vec<Option<Vec<u8>>>> =
                lists.query_async(&mut self.redis.clone()).await?;
            let media: Vec<i64> = lists.into_iter().flat_map(int_ids).collect();
            let mut features = redis::pipe();
            for m in &media {
                features
                    .cmd("HMGET")
                    .arg(format!("media_features:{m}"))
                    .arg(&FEATURES[..]);
            }
            let features: Vec<Vec<Option<Vec<u8>>>> =
                features.query_async(&mut self.redis.clone()).await?;
            RedisResult::Ok((media, features))
        };
        let followee_hashes = async {
            let _: Vec<Value> = hashes.query_async(&mut self.redis.clone()).await?;
            RedisResult::Ok(())
        };
        let ((media, features), ()) = try_join(media_and_features, followee_hashes).await?;
        Ok(top(media, features, params))
    }
}

fn compile(pattern: &str) -> Result<Regex, BadRequest> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| BadRequest(format!("param blocklist_regex does not compile: {e}")))
}

fn wrong_type(name: &str) -> BadRequest {
    BadRequest(format!("param {name} has the wrong type"))
}

/// score, quality filter, top 50 by final_score (ties keep the media's order).
fn top(media: Vec<i64>, features: Vec<Vec<Option<Vec<u8>>>>, params: &Params) -> Vec<Row> {
    let mut rows = Vec::with_capacity(media.len());
    for (id, values) in media.into_iter().zip(features) {
        let mut values = values.into_iter();
        let mut next = || values.next().flatten();
        let (author, age, likes, ctr, title) = (next(), next(), next(), next(), next());
        let author_id = author.as_deref().and_then(parse_int);
        let age_hours = age.as_deref().and_then(parse_float);
        let likes = likes.as_deref().and_then(parse_int);
        let ctr = ctr.as_deref().and_then(parse_float);
        let title = title.and_then(parse_string);
        // score = ctr + like_weight * log1p(likes) - recency_weight * age_hours, missing as 0;
        // a score that is not finite is null, and a null comparison or regex is not true (so the
        // row is filtered out).
        let mut score =
            ctr.unwrap_or(0.0) + params.like_weight * (likes.unwrap_or(0) as f64).ln_1p();
        score -= params.recency_weight * age_hours.unwrap_or(0.0);
        if !score.is_finite() || score < params.min_score {
            continue;
        }
        match &title {
            Some(t) if !params.blocklist.is_match(t) => {}
            _ => continue,
        }
        rows.push(Row {
            id,
            author_id,
            age_hours,
            likes,
            ctr,
            title,
            final_score: score,
        });
    }
    // A stable sort: equal scores keep their order.
    rows.sort_by(|a, b| b.final_score.total_cmp(&a.final_score));
    rows.truncate(TOP_K);
    rows
}

/// The rows as a JSON array, as rankd writes them (`id` first, then the registry's order).
pub fn push_rows(out: &mut String, rows: &[Row]) {
    out.push('[');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"id\":");
        out.push_str(&row.id.to_string());
        out.push_str(",\"author_id\":");
        push_optional(out, row.author_id, |out, v| out.push_str(&v.to_string()));
        out.push_str(",\"age_hours\":");
        push_optional(out, row.age_hours, push_number);
        out.push_str(",\"likes\":");
        push_optional(out, row.likes, |out, v| out.push_str(&v.to_string()));
        out.push_str(",\"ctr\":");
        push_optional(out, row.ctr, push_number);
        out.push_str(",\"title\":");
        push_optional(out, row.title.as_deref(), push_string);
        out.push_str(",\"final_score\":");
        push_number(out, row.final_score);
        out.push('}');
    }
    out.push(']');
}

fn push_optional<T>(out: &mut String, value: Option<T>, push: impl Fn(&mut String, T)) {
    match value {
        Some(v) => push(out, v),
        None => out.push_str("null"),
    }
}

/// A JSON string literal (serde_json's escaping).
pub fn push_string(out: &mut String, text: &str) {
    out.push_str(&serde_json::to_string(text).expect("a str always serializes"));
}
