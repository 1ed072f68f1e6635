//! The JSON API on `--http-listen`: a real coordinator with a real worker answers
//! `POST /api/v1/solve` optimally (each path replayed to its goal at the known optimal length);
//! a bad board is 400 naming what is wrong, no worker is 503, past the search limit is 429 with
//! `Retry-After`, and with a client token configured a call without it is 401. The console page
//! is served from the binary, and its event stream shows the workers and the searches, live.
//! Detached jobs: `POST /api/v1/jobs` is 202 with the job's id, `GET /api/v1/jobs/{id}` gives
//! its optimal answer once done, an unknown id is 404 and a malformed one 400.

use std::net::SocketAddr;
use std::time::Duration;

use crate::common::{TestCluster, assert_optimal, eager_config, korf};
use npuzzle_coordinator::{Auth, Config, HttpListener};
use npuzzle_proto::security::{ClientSecurity, Token};
use npuzzle_solver::{Board, Goal};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An HTTP answer: status code, headers (names lower-cased), body.
struct Reply {
    code: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

/// One HTTP/1.1 request on a connection of its own (`Connection: close`), read to its end.
async fn call(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut raw))
        .await
        .expect("an answer within 60 s")
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a header and a body");
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        code,
        headers,
        body: body.to_string(),
    }
}

async fn solve(address: SocketAddr, body: Value) -> Reply {
    call(address, "POST", "/api/v1/solve", &[], &body.to_string()).await
}

/// A coordinator serving the HTTP API on a free port, and that port's address.
async fn start(config: Config) -> (TestCluster, SocketAddr) {
    start_secured(config, ClientSecurity::default()).await
}

async fn start_secured(mut config: Config, client: ClientSecurity) -> (TestCluster, SocketAddr) {
    let http = HttpListener::bind("127.0.0.1:0").unwrap();
    let address = http.local_addr();
    config.http = Some(http);
    let cluster = TestCluster::start_secured(config, client, ClientSecurity::default()).await;
    (cluster, address)
}

/// Checks that a JSON answer is a solution of `length` moves that replays from `tiles` to
/// `goal` (the shared [`assert_optimal`]), and says so in its `length`.
fn assert_solved_optimally(answer: &Value, tiles: &str, goal: &Goal, length: usize) {
    assert_eq!(answer["status"], "solved", "{answer}");
    assert_eq!(answer["length"], length, "{answer}");
    let moves = answer["moves"].as_str().expect("moves");
    assert_optimal(tiles, goal, moves, length);
}

#[tokio::test]
async fn boards_posted_as_text_or_tiles_are_answered_optimally() {
    let (mut cluster, address) = start(eager_config()).await;
    cluster.add_worker(2).await;

    // The 8-puzzle every judge knows: 31 moves to the blank-last goal.
    let eight = "8 6 7 2 5 4 3 0 1";
    let reply = solve(address, json!({ "board": eight })).await;
    assert_eq!(reply.code, 200, "{}", reply.body);
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "{}",
        reply.body
    );
    let answer = reply.json();
    let shape = Board::parse(eight, None).unwrap().shape();
    assert_solved_optimally(&answer, eight, &Goal::blank_last(shape), 31);
    assert_eq!(answer["cached"], false);
    // Asked again: the same path, from the cache.
    let again = solve(address, json!({ "board": "8,6,7,2,5,4,3,x,1" }))
        .await
        .json();
    assert_solved_optimally(&again, eight, &Goal::blank_last(shape), 31);
    assert_eq!(again["cached"], true, "{again}");

    // A 15-puzzle (Korf's instance 79), as an array of tiles, to Korf's goal: searched by the
    // worker.
    let (_, length, tiles) = &korf(&[79])[0];
    let array: Vec<u32> = tiles
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let reply = solve(
        address,
        json!({ "board": array, "goal": "blank-first", "heuristic": "lc" }),
    )
    .await;
    assert_eq!(reply.code, 200, "{}", reply.body);
    let answer = reply.json();
    let shape = Board::parse(tiles, None).unwrap().shape();
    assert_solved_optimally(&answer, tiles, &Goal::blank_first(shape), *length);
    assert_eq!(answer["heuristic"], "lc", "{answer}");

    // An unsolvable board is answered at once.
    let swapped = solve(address, json!({ "board": "2 1 3 4 5 6 7 8 0" })).await;
    assert_eq!(swapped.code, 200);
    assert_eq!(swapped.json()["status"], "unsolvable");

    let stats = call(address, "GET", "/api/v1/stats", &[], "").await;
    assert_eq!(stats.code, 200, "{}", stats.body);
    let stats = stats.json();
    assert_eq!(stats["workers"], 1, "{stats}");
    assert_eq!(stats["slots"], 2, "{stats}");
    assert_eq!(stats["cache_hits"], 1, "{stats}");
    let searches = call(address, "GET", "/api/v1/searches", &[], "").await;
    assert_eq!(searches.code, 200, "{}", searches.body);
    assert_eq!(searches.json(), json!([]), "every search has ended");
    // The answer can come back before the worker's other thread has stopped on the cancel (the
    // search may have been cut for it): its slot frees within moments.
    let mut tries = 0;
    let workers = loop {
        let workers = call(address, "GET", "/api/v1/workers", &[], "").await;
        assert_eq!(workers.code, 200, "{}", workers.body);
        let workers = workers.json();
        let idle = workers[0]["busy_slots"].as_u64() == Some(0);
        tries += 1;
        if idle || tries == 100 {
            break workers;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let list = workers.as_array().expect("an array of workers");
    assert_eq!(list.len(), 1, "{workers}");
    assert_eq!(
        (list[0]["slots"].as_u64(), list[0]["busy_slots"].as_u64()),
        (Some(2), Some(0)),
        "{workers}"
    );
    cluster.stop().await;
}

#[tokio::test]
async fn a_bad_request_is_400_naming_what_is_wrong() {
    let (cluster, address) = start(eager_config()).await;
    for (body, expected) in [
        (json!({ "board": "1 2 3 4 5 6 7 8 8" }), "duplicate tile 8"),
        (
            json!({ "board": "1 2 3 y 5 6 7 8 0" }),
            "unknown token \"y\"",
        ),
        (
            json!({ "board": [1, 2, 3, 4, 0] }),
            "cannot infer the board size",
        ),
        (json!({ "board": "4 1 2 5 0 3", "size": "7x2" }), "7x2"),
        (json!({ "board": [1, 2, true] }), "item 2 is true"),
        (json!({ "board": 17 }), "board must be text"),
        (json!({ "bord": "1 2 3 0" }), "unknown field `bord`"),
        (json!({ "goal": "blank-first" }), "\"board\" is missing"),
        (
            json!({ "board": "1 2 3 0", "heuristic": "fast" }),
            "unknown heuristic \"fast\"",
        ),
        (
            json!({ "board": "1 2 3 0", "goal": "1 2 3" }),
            "invalid goal: missing blank",
        ),
    ] {
        let reply = solve(address, body.clone()).await;
        assert_eq!(reply.code, 400, "{body}: {}", reply.body);
        let answer = reply.json();
        assert_eq!(answer["status"], "invalid", "{body}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(expected), "{body}: {error:?}");
    }
    let not_json = call(address, "POST", "/api/v1/solve", &[], "board=1 2 3 0").await;
    assert_eq!(not_json.code, 400, "{}", not_json.body);
    assert!(
        not_json.json()["error"]
            .as_str()
            .unwrap()
            .contains("not the JSON expected"),
        "{}",
        not_json.body
    );
    cluster.stop().await;
}

#[tokio::test]
async fn without_a_worker_a_search_is_503_and_past_the_limit_429_with_retry_after() {
    let config = Config {
        max_searches: 1,
        unavailable_after: Duration::from_secs(2),
        ..eager_config()
    };
    let (cluster, address) = start(config).await;
    let boards = korf(&[79, 12]);
    // The first takes the one place and waits for a worker that never comes.
    let first = serde_json::json!({ "board": boards[0].2, "goal": "blank-first" });
    let waiting = tokio::spawn(async move { solve(address, first).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let refused = solve(
        address,
        json!({ "board": boards[1].2, "goal": "blank-first" }),
    )
    .await;
    assert_eq!(refused.code, 429, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.json()["reason"], "busy", "{}", refused.body);

    let unavailable = waiting.await.unwrap();
    assert_eq!(unavailable.code, 503, "{}", unavailable.body);
    let answer = unavailable.json();
    assert_eq!(answer["status"], "failed", "{answer}");
    assert_eq!(answer["reason"], "unavailable", "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("no worker is connected"),
        "{answer}"
    );
    cluster.stop().await;
}

#[tokio::test]
async fn with_a_client_token_the_api_is_401_without_it() {
    const SECRET: &str = "client-7d2e9b41c6a0";
    let config = Config {
        auth: Auth {
            client: Some(Token::new(SECRET, "test").unwrap()),
            worker: None,
        },
        ..eager_config()
    };
    let client = ClientSecurity {
        token: Some(Token::new(SECRET, "test").unwrap()),
        ..ClientSecurity::default()
    };
    let (cluster, address) = start_secured(config, client).await;
    let body = json!({ "board": "8 6 7 2 5 4 3 0 1" }).to_string();
    let bearer = format!("Bearer {SECRET}");
    for (path, method, body) in [
        ("/api/v1/solve", "POST", body.as_str()),
        ("/api/v1/stats", "GET", ""),
        ("/api/v1/searches", "GET", ""),
        ("/api/v1/workers", "GET", ""),
    ] {
        let missing = call(address, method, path, &[], body).await;
        assert_eq!(missing.code, 401, "{path}: {}", missing.body);
        assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
        assert!(
            missing.json()["error"]
                .as_str()
                .unwrap()
                .contains("client token is required"),
            "{}",
            missing.body
        );
        let wrong = call(
            address,
            method,
            path,
            &[("Authorization", "Bearer not-the-token")],
            body,
        )
        .await;
        assert_eq!(wrong.code, 401, "{path}: {}", wrong.body);
        assert!(!wrong.body.contains(SECRET));
        let right = call(address, method, path, &[("Authorization", &bearer)], body).await;
        assert_eq!(right.code, 200, "{path}: {}", right.body);
    }
    cluster.stop().await;
}

/// Reads `GET /api/v1/events` until `done` holds for a snapshot (or 10 s pass); returns it.
async fn snapshot_where(address: SocketAddr, done: impl Fn(&Value) -> bool) -> Value {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "GET /api/v1/events HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    let mut buffer = [0u8; 16384];
    let give_up = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let n = tokio::time::timeout_at(give_up, stream.read(&mut buffer))
            .await
            .expect("a snapshot that matches within 10 s")
            .unwrap();
        assert!(n > 0, "the event stream ended: {raw}");
        raw.push_str(&String::from_utf8_lossy(&buffer[..n]));
        // Each event's data is one line of JSON (chunk sizes come on lines of their own).
        for line in raw.lines() {
            if let Some(data) = line.strip_prefix("data: ")
                && let Ok(snapshot) = serde_json::from_str::<Value>(data)
                && done(&snapshot)
            {
                return snapshot;
            }
        }
    }
}

#[tokio::test]
async fn the_console_is_served_and_its_events_show_workers_and_searches_live() {
    let (mut cluster, address) = start(eager_config()).await;
    let page = call(address, "GET", "/", &[], "").await;
    assert_eq!(page.code, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        page.body.contains("<script src=\"/console.js\">"),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains("https://"),
        "the page fetches nothing from elsewhere"
    );
    let script = call(address, "GET", "/console.js", &[], "").await;
    assert_eq!(script.code, 200);
    assert!(script.body.contains("/api/v1/events"));
    assert_eq!(
        call(address, "GET", "/console.css", &[], "").await.code,
        200
    );

    cluster.add_worker(1).await;
    let with_worker = snapshot_where(address, |s| {
        s["workers"].as_array().is_some_and(|w| w.len() == 1)
    })
    .await;
    let worker = &with_worker["workers"][0];
    assert_eq!(worker["slots"], 1, "{worker}");
    assert_eq!(worker["address"], "127.0.0.1", "{worker}");
    assert!(
        worker["connected_since_ms"].as_u64().unwrap() > 0,
        "{worker}"
    );

    // A search shows while it runs, with its bounds, and stays among the ended ones with its
    // answer, which replays to the goal at the optimal length.
    let (_, length, tiles) = korf(&[12]).remove(0);
    let body = json!({ "board": tiles, "goal": "blank-first", "heuristic": "md" });
    let asked = tokio::spawn(async move { solve(address, body).await });
    let running = snapshot_where(address, |s| {
        s["searches"].as_array().is_some_and(|x| !x.is_empty())
            || s["finished"].as_array().is_some_and(|x| !x.is_empty())
    })
    .await;
    let reply = asked.await.unwrap();
    assert_eq!(reply.code, 200, "{}", reply.body);
    if let Some(search) = running["searches"].as_array().and_then(|x| x.first()) {
        assert_eq!(search["board"], tiles.as_str(), "{search}");
        assert_eq!(search["heuristic"], "md", "{search}");
        assert_eq!(search["waiters"], 1, "{search}");
    }
    let ended = snapshot_where(address, |s| {
        s["finished"].as_array().is_some_and(|x| !x.is_empty())
    })
    .await;
    let finished = &ended["finished"][0];
    assert_eq!(finished["outcome"], "solved", "{finished}");
    let bounds: Vec<u64> = finished["bounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    // A search that ends whole on its first worker shows only the bound it was sent with.
    assert!(
        !bounds.is_empty()
            && bounds.windows(2).all(|w| w[0] < w[1])
            && bounds.iter().all(|&b| b <= length as u64),
        "the bounds rise, up to the optimal length {length}: {finished}"
    );
    let answer = json!({ "status": "solved", "moves": finished["moves"], "length": length });
    let shape = Board::parse(&tiles, None).unwrap().shape();
    assert_solved_optimally(&answer, &tiles, &Goal::blank_first(shape), length);
    assert!(ended["requests"].as_u64().unwrap() >= 1, "{ended}");
    cluster.stop().await;
}

#[tokio::test]
async fn a_job_posted_is_202_and_read_back_by_id_with_its_optimal_answer() {
    let (mut cluster, address) = start(eager_config()).await;
    cluster.add_worker(2).await;
    let (_, optimal, tiles) = korf(&[42]).remove(0);
    let body = json!({ "board": tiles, "goal": "blank-first" }).to_string();
    let posted = call(address, "POST", "/api/v1/jobs", &[], &body).await;
    assert_eq!(posted.code, 202, "{}", posted.body);
    let id = posted.json()["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 16, "{}", posted.body);
    let path = format!("/api/v1/jobs/{id}");
    let mut job = Value::Null;
    for _ in 0..600 {
        job = call(address, "GET", &path, &[], "").await.json();
        if job["state"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(job["state"], "done", "{job}");
    assert_solved_optimally(
        &job["answer"],
        &tiles,
        &Goal::blank_first(Board::parse(&tiles, None).unwrap().shape()),
        optimal,
    );
    let listed = call(address, "GET", "/api/v1/jobs", &[], "").await.json();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["id"] == id.as_str()),
        "{listed}"
    );

    let unknown = call(address, "GET", "/api/v1/jobs/0123456789abcdef", &[], "").await;
    assert_eq!(unknown.code, 404, "{}", unknown.body);
    assert!(
        unknown.json()["error"].as_str().unwrap().contains("no job"),
        "{}",
        unknown.body
    );
    let malformed = call(address, "DELETE", "/api/v1/jobs/nope", &[], "").await;
    assert_eq!(malformed.code, 400, "{}", malformed.body);
    let bad_board = call(
        address,
        "POST",
        "/api/v1/jobs",
        &[],
        r#"{"board": "1 2 3"}"#,
    )
    .await;
    assert_eq!(bad_board.code, 400, "{}", bad_board.body);
}
