//! The JSON API over HTTP, served with `--http-listen` ([`crate::Config::http`]) beside gRPC, by
//! the same runtime and from the same solve pipeline (`solve.rs`): a request here takes the same path as a
//! gRPC `Solve` (validation, cache, flights, admissions), and gets the same answers and errors.
//!
//! - `POST /api/v1/solve`: one board (see [`SolveBody`]); the answer as `npuzzle solve --json`
//!   prints it. Status codes: 200 with an answer (`solved`, `unsolvable`, or `failed` with
//!   `reason` `deadline` or `cancelled`), 400 for a bad board or body (`status: "invalid"`, the
//!   `error` naming what is wrong, in the CLI's words), 422 for pattern databases no connected
//!   worker holds, 429 with `Retry-After` past the search limits, 503 without workers or while
//!   draining, 401 without the client token when one is configured.
//! - `GET /api/v1/stats`: what `Stats` reports.
//! - `GET /api/v1/searches`: the searches running now, with their bounds and waiters.
//! - `GET /api/v1/workers`: the workers connected now, each with its slots and busy slots.
//!
//! - `GET /api/v1/events`: server-sent events, one `snapshot` a second (see [`Snapshot`]):
//!   workers, searches running and ended, the cache, requests per second and their latency
//!   over the last [`HISTORY`] seconds. The console reads it.
//! - `GET /`: the web console, one page whose HTML, script and style are compiled into the
//!   binary (`console/`): no CDN, nothing fetched from elsewhere.
//!
//! Every `/api/` path requires the client token when one is configured (see [`crate::auth`]),
//! in an `Authorization: Bearer <token>` header. Nothing here runs unless `--http-listen` is
//! given: without it no listener is bound and no task is started.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use npuzzle_proto::answer::{Answer, FailReason};
use npuzzle_proto::{board_to_wire, goal_to_wire, heuristic_from_wire, heuristic_to_wire, v1};
use npuzzle_solver::{Board, GoalSpec, HeuristicKind, Shape};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use crate::auth::RequireToken;
use crate::jobs::{JobError, Jobs};
use crate::metrics::RequestMetric;
use crate::solve::{self, Pipeline, SolveError};

/// The largest request body accepted: a 5x5 board with a custom goal is a few hundred bytes.
const MAX_BODY: usize = 16 * 1024;

/// How long open connections (a long search, a console's event stream) get to finish once the
/// coordinator stops, before they are dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The address the HTTP API is served on, bound by the caller (port 0 picks a free one) so
/// that it can learn the address before [`crate::run`] starts.
#[derive(Clone, Debug)]
pub struct HttpListener {
    listener: Arc<std::net::TcpListener>,
    address: SocketAddr,
}

impl HttpListener {
    /// Binds `address` (e.g. `127.0.0.1:8080`, `127.0.0.1:0`).
    pub fn bind(address: impl ToSocketAddrs) -> io::Result<HttpListener> {
        let listener = std::net::TcpListener::bind(address)?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        Ok(HttpListener {
            listener: Arc::new(listener),
            address,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }
}

/// Seconds of request history the console's charts show.
pub const HISTORY: usize = 300;

/// What every handler needs.
struct Api {
    pipeline: Arc<Pipeline>,
    jobs: Arc<Jobs>,
    /// The client token's check, as on `npuzzle.v1.Solver`.
    auth: RequireToken,
    /// Ends the event streams when the coordinator stops (they never end by themselves).
    stop: CancellationToken,
    /// One sample a second of the requests answered, the last [`HISTORY`], oldest first:
    /// filled by [`sample`], which runs only while the API is served.
    history: std::sync::Mutex<std::collections::VecDeque<Sample>>,
}

/// Requests answered in one second, and their mean latency.
#[derive(Clone, Copy, Debug, Serialize)]
struct Sample {
    /// The second's end, in milliseconds since the Unix epoch.
    at_ms: u64,
    requests: u64,
    mean_ms: f64,
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Api {
    fn history(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<Sample>> {
        self.history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Samples the requests answered once a second into [`Api::history`], until `stop`.
async fn sample(api: Arc<Api>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = api.pipeline.activity.totals();
    loop {
        tokio::select! {
            () = api.stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = api.pipeline.activity.totals();
        let (requests, micros) = (now.0 - last.0, now.1 - last.1);
        last = now;
        let mean_ms = if requests > 0 {
            micros as f64 / requests as f64 / 1e3
        } else {
            0.0
        };
        let mut history = api.history();
        if history.len() >= HISTORY {
            history.pop_front();
        }
        history.push_back(Sample {
            at_ms: now_ms(),
            requests,
            mean_ms,
        });
    }
}

type ApiState = State<Arc<Api>>;

/// The routes, over `pipeline` and `jobs`, guarded by `auth`; event streams end when `stop` fires. Starts
/// the task that samples the request rate (it ends with `stop` too).
pub(crate) fn router(
    pipeline: Arc<Pipeline>,
    jobs: Arc<Jobs>,
    auth: RequireToken,
    stop: CancellationToken,
) -> Router {
    let api = Arc::new(Api {
        pipeline,
        jobs,
        auth,
        stop,
        history: std::sync::Mutex::new(std::collections::VecDeque::with_capacity(HISTORY)),
    });
    tokio::spawn(sample(Arc::clone(&api)));
    Router::new()
        .route("/", get(console::page))
        .route("/console.js", get(console::script))
        .route("/console.css", get(console::style))
        .route("/api/v1/solve", post(solve))
        .route("/api/v1/stats", get(stats))
        .route("/api/v1/searches", get(searches))
        .route("/api/v1/workers", get(workers))
        .route("/api/v1/events", get(events))
        .route("/api/v1/jobs", post(submit_job).get(list_jobs))
        .route("/api/v1/jobs/{id}", get(get_job).delete(cancel_job))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(api)
}

/// The console's assets, compiled in.
mod console {
    use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
    use axum::response::IntoResponse;

    const PAGE: &str = include_str!("console/index.html");
    const SCRIPT: &str = include_str!("console/console.js");
    const STYLE: &str = include_str!("console/console.css");

    fn asset(kind: &'static str, body: &'static str) -> impl IntoResponse {
        ([(CONTENT_TYPE, kind), (CACHE_CONTROL, "no-cache")], body)
    }

    pub(super) async fn page() -> impl IntoResponse {
        asset("text/html; charset=utf-8", PAGE)
    }

    pub(super) async fn script() -> impl IntoResponse {
        asset("text/javascript; charset=utf-8", SCRIPT)
    }

    pub(super) async fn style() -> impl IntoResponse {
        asset("text/css; charset=utf-8", STYLE)
    }
}

/// Serves `router` on `listener` until `stop` fires; connections still open then get
/// [`CLOSE_GRACE`] to finish. A request whose header has not all come within `header_read` of
/// the connection's opening (or of the previous response) closes its connection: a client
/// trickling its request a byte at a time holds nothing for long.
pub(crate) async fn serve(
    listener: &HttpListener,
    router: Router,
    limits: crate::incoming::Limits,
    header_read: Duration,
    stop: CancellationToken,
) -> io::Result<()> {
    use axum::extract::connect_info::ConnectInfo;
    use axum::serve::Listener;
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use tower::ServiceExt;
    let tcp = tokio::net::TcpListener::from_std(listener.listener.try_clone()?)?;
    // The gRPC port's bounds (connections, first byte), counted apart.
    let mut tcp = crate::incoming::BoundedListener::new(tcp, limits);
    tracing::info!(address = %listener.address, "web console and JSON API at http://{}/", listener.address);
    // axum::serve cannot set hyper's header timeout: each connection is served here as it
    // does, over HTTP/1 with the timeout, the peer's address lent to handlers (ConnectInfo).
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (io, peer) = tokio::select! {
            accepted = tcp.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            () = stop.cancelled() => break,
        };
        let service = router
            .clone()
            .map_request(move |mut request: axum::http::Request<_>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request.map(axum::body::Body::new)
            });
        let service = hyper_util::service::TowerToHyperService::new(service);
        let stop = stop.clone();
        connections.spawn(async move {
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read);
            let builder = builder.http1_only();
            let mut connection =
                std::pin::pin!(builder.serve_connection(TokioIo::new(io), service));
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, %peer, "HTTP connection ended");
                    }
                }
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    // Open connections (a long search, a console's event stream) get a moment to finish.
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    Ok(())
}

/// A refusal or failure, as the API answers it: a status code and a body in the shape of an
/// answer (`status` `invalid` or `failed`, `error`, `reason`).
#[derive(Debug)]
pub(crate) struct ApiError {
    code: StatusCode,
    /// Boxed: an error is rare, and a small `Result` keeps the happy path cheap.
    body: Box<ApiAnswer>,
    /// Seconds for `Retry-After`.
    retry_after: Option<u64>,
}

impl ApiError {
    /// 400: the request is wrong, for `error`.
    fn invalid(error: impl Into<String>) -> ApiError {
        ApiError {
            code: StatusCode::BAD_REQUEST,
            body: Box::new(ApiAnswer::invalid(error.into())),
            retry_after: None,
        }
    }

    /// 401: the client token is missing or wrong, as [`RequireToken`]'s refusal says.
    fn unauthenticated(refusal: Status) -> ApiError {
        ApiError {
            code: StatusCode::UNAUTHORIZED,
            body: Box::new(ApiAnswer::failed(
                FailReason::Unauthenticated,
                refusal.message().to_string(),
            )),
            retry_after: None,
        }
    }
}

impl From<SolveError> for ApiError {
    /// The HTTP form of a request's refusal: its message, under the status code that means it
    /// (past the search limits, with `Retry-After`).
    fn from(error: SolveError) -> ApiError {
        let message = error.to_string();
        let failed = |code, reason| ApiError {
            code,
            body: Box::new(ApiAnswer::failed(reason, message.clone())),
            retry_after: None,
        };
        match error {
            SolveError::Invalid(_) => ApiError::invalid(message),
            SolveError::NoTables(_) => ApiError {
                code: StatusCode::UNPROCESSABLE_ENTITY,
                ..ApiError::invalid(message)
            },
            SolveError::Busy { retry_after, .. } => ApiError {
                // Whole seconds, rounded up: a client never retries too soon.
                retry_after: Some((retry_after.as_millis().max(1) as u64).div_ceil(1000)),
                ..failed(StatusCode::TOO_MANY_REQUESTS, FailReason::Busy)
            },
            SolveError::Draining
            | SolveError::NoWorker { .. }
            | SolveError::TablesGone { .. }
            | SolveError::ShuttingDown
            | SolveError::Stopped { .. } => {
                failed(StatusCode::SERVICE_UNAVAILABLE, FailReason::Unavailable)
            }
            SolveError::Failed(_) | SolveError::Lost => {
                failed(StatusCode::INTERNAL_SERVER_ERROR, FailReason::Internal)
            }
        }
    }
}

impl From<JobError> for ApiError {
    /// A job request's refusal: `Solve`'s, a malformed id (400), an unknown one (404), or no
    /// room for more jobs (503).
    fn from(error: JobError) -> ApiError {
        match error {
            JobError::Solve(e) => e.into(),
            JobError::BadId(_) => ApiError::invalid(error.to_string()),
            JobError::NotFound(_) => ApiError {
                code: StatusCode::NOT_FOUND,
                ..ApiError::invalid(error.to_string())
            },
            JobError::Full => ApiError {
                code: StatusCode::SERVICE_UNAVAILABLE,
                body: Box::new(ApiAnswer::failed(FailReason::Busy, error.to_string())),
                retry_after: None,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.code, json(&self.body)).into_response();
        let headers = response.headers_mut();
        if let Some(seconds) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.code == StatusCode::UNAUTHORIZED {
            headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// `value` as a JSON response.
fn json<T: Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => (
            [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            bytes,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

impl Api {
    /// The client token's check on a request's headers.
    fn authorize(&self, headers: &HeaderMap, peer: SocketAddr) -> Result<(), ApiError> {
        let authorization = headers.get(AUTHORIZATION).map(HeaderValue::as_bytes);
        self.auth
            .authorize(authorization, Some(peer))
            .map_err(ApiError::unauthenticated)
    }
}

/// The body of `POST /api/v1/solve`. Unknown fields are refused, by name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolveBody {
    /// The board: text in any form the CLI reads (`"8 6 7 2 5 4 3 0 1"`, `"2,1,3,x,…"`), or an
    /// array of tiles (`[8, 6, 7, …]`, `0` or `"x"` for the blank).
    pub board: Option<serde_json::Value>,
    /// `WxH`, for boards that are not square (e.g. `"3x2"`).
    pub size: Option<String>,
    /// `blank-last` (the default), `blank-first`, or the goal's tiles (text or array).
    pub goal: Option<serde_json::Value>,
    /// `auto` (the default), `md`, `lc`, `exact` or `pdb`.
    pub heuristic: Option<String>,
    /// The search's deadline, in milliseconds (none: no deadline).
    pub timeout_ms: Option<u64>,
    /// Search even if the answer is cached.
    #[serde(default)]
    pub skip_cache: bool,
    /// Any path at most this factor of the optimal length will do (1 or none: optimal).
    pub within: Option<f64>,
}

/// Tiles given as JSON (text, or an array of numbers and blank letters) as the text the CLI
/// reads, or what is wrong with them.
fn tiles_text(value: &serde_json::Value, what: &str) -> Result<String, String> {
    use serde_json::Value;
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Number(n) => Ok(n.to_string()),
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "{what}: item {i} is {other}, not a tile (a number, or \"x\" for the blank)"
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|tiles| tiles.join(" ")),
        other => Err(format!(
            "{what} must be text (\"8 6 7 2 5 4 3 0 1\") or an array of tiles, not {other}"
        )),
    }
}

impl SolveBody {
    /// The gRPC request this body asks for, checked as the CLI checks its input, or what is
    /// wrong with it.
    pub fn to_request(&self) -> Result<v1::SolveRequest, String> {
        let board = self
            .board
            .as_ref()
            .ok_or("the field \"board\" is missing: give the tiles, e.g. \"8 6 7 2 5 4 3 0 1\"")?;
        let shape = match &self.size {
            Some(size) => Some(size.parse::<Shape>().map_err(|e| e.to_string())?),
            None => None,
        };
        let board = Board::parse(&tiles_text(board, "board")?, shape).map_err(|e| e.to_string())?;
        let spec = match &self.goal {
            None => GoalSpec::BlankLast,
            Some(serde_json::Value::String(s)) => match s.parse::<GoalSpec>() {
                Ok(spec) => spec,
                Err(never) => match never {},
            },
            Some(tiles) => GoalSpec::Tiles(tiles_text(tiles, "goal")?),
        };
        let goal = spec.resolve(board.shape()).map_err(|e| e.to_string())?;
        let heuristic = match self.heuristic.as_deref().map(str::trim) {
            None | Some("") => v1::Heuristic::Auto,
            Some(h) if h.eq_ignore_ascii_case("auto") => v1::Heuristic::Auto,
            Some(h) => heuristic_to_wire(h.parse::<HeuristicKind>().map_err(|e| e.to_string())?),
        };
        Ok(v1::SolveRequest {
            board: Some(board_to_wire(&board)),
            goal: Some(goal_to_wire(&goal)),
            heuristic: heuristic as i32,
            timeout_ms: self.timeout_ms.unwrap_or(0),
            skip_cache: self.skip_cache,
            within: match self.within {
                Some(w) => npuzzle_solver::Weight::new(w)
                    .map_err(|e| format!("within: {e}"))?
                    .factor(),
                None => 0.0,
            },
        })
    }
}

/// An answer as the API gives it: [`Answer`], the JSON `npuzzle solve --json` prints (one type
/// for both, in `npuzzle_proto`), and what the coordinator adds after its fields.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ApiAnswer {
    /// `index` always 0: one board per request (the field keeps the CLI's shape).
    #[serde(flatten)]
    answer: Answer,
    /// The heuristic of the search that found the path (`null` when none ran).
    heuristic: Option<String>,
    /// Work units, splits and requeued units of a distributed search.
    units: u32,
    splits: u32,
    requeued: u32,
}

impl ApiAnswer {
    fn of(answer: Answer) -> ApiAnswer {
        ApiAnswer {
            answer,
            heuristic: None,
            units: 0,
            splits: 0,
            requeued: 0,
        }
    }

    fn invalid(error: String) -> ApiAnswer {
        ApiAnswer::of(Answer::invalid(0, error))
    }

    fn failed(reason: FailReason, error: String) -> ApiAnswer {
        ApiAnswer::of(Answer::failed(0, reason, error))
    }

    fn from_response(r: &v1::SolveResponse) -> ApiAnswer {
        let answer = Answer::from_response(0, r);
        ApiAnswer {
            answer: Answer {
                nodes: r.nodes,
                millis: (r.millis * 1e3).round() / 1e3,
                cached: r.cached,
                ..answer
            },
            heuristic: heuristic_from_wire(r.heuristic_used)
                .ok()
                .flatten()
                .map(|h| h.to_string()),
            units: r.units,
            splits: r.splits,
            requeued: r.requeued,
        }
    }
}

/// The request a `POST /api/v1/solve` or `/api/v1/jobs` body asks for, or a 400 naming what is
/// wrong with it.
fn solve_request(body: &[u8]) -> Result<v1::SolveRequest, ApiError> {
    let parsed: SolveBody = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("the body is not the JSON expected: {e}")))?;
    parsed.to_request().map_err(ApiError::invalid)
}

/// `POST /api/v1/solve`.
async fn solve(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    let mut metric = RequestMetric::start("http");
    let request = solve_request(&body).inspect_err(|_| {
        metric.invalid();
    })?;
    // The metrics label a request by its outcome, whichever way it came.
    let answer = api.pipeline.solve(&request, None, Some(peer.ip())).await;
    metric.finish(solve::outcome(&answer));
    match answer {
        Ok(response) => Ok(json(&ApiAnswer::from_response(&response))),
        Err(error) => Err(error.into()),
    }
}

/// What `GET /api/v1/stats` answers: the fields of `Stats`.
#[derive(Debug, Serialize)]
pub struct Stats {
    workers: u32,
    slots: u32,
    busy_slots: u64,
    running_jobs: u32,
    queue_depth: u32,
    cache_entries: u64,
    cache_hits: u64,
    cache_misses: u64,
    cache_hit_rate: f64,
    late_nodes: u64,
}

/// `GET /api/v1/stats`.
async fn stats(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    Ok(json(&Stats::from(api.pipeline.stats().await)))
}

impl From<v1::StatsResponse> for Stats {
    fn from(s: v1::StatsResponse) -> Stats {
        Stats {
            workers: s.workers,
            slots: s.slots,
            busy_slots: s.busy_slots,
            running_jobs: s.running_jobs,
            queue_depth: s.queue_depth,
            cache_entries: s.cache_entries,
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            cache_hit_rate: s.cache_hit_rate,
            late_nodes: s.late_nodes,
        }
    }
}

/// One event of `GET /api/v1/events`: everything the console shows.
#[derive(Debug, Serialize)]
pub struct Snapshot {
    /// When it was taken, in milliseconds since the Unix epoch.
    at_ms: u64,
    stats: Stats,
    workers: Vec<crate::scheduler_actor::WorkerView>,
    searches: Vec<crate::console::SearchView>,
    finished: Vec<crate::console::FinishedView>,
    /// Requests answered since the start.
    requests: u64,
    /// One sample a second, oldest first.
    history: Vec<Sample>,
}

async fn snapshot(api: &Api) -> Snapshot {
    let pipeline = &api.pipeline;
    Snapshot {
        at_ms: now_ms(),
        stats: Stats::from(pipeline.stats().await),
        workers: pipeline.scheduler.workers_view().await,
        searches: pipeline.searches.views(),
        finished: pipeline.searches.finished(),
        requests: pipeline.activity.totals().0,
        history: api.history().iter().copied().collect(),
    }
}

/// How often `GET /api/v1/events` sends a snapshot.
const EVENT_EVERY: Duration = Duration::from_secs(1);

/// `GET /api/v1/events`: a snapshot at once, then one every [`EVENT_EVERY`], until the client
/// goes or the coordinator stops.
async fn events(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    api.authorize(&headers, peer)?;
    let mut tick = tokio::time::interval(EVENT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let stream = futures_util::stream::unfold((api, tick), |(api, mut tick)| async move {
        tokio::select! {
            () = api.stop.cancelled() => return None,
            _ = tick.tick() => {}
        }
        let data = serde_json::to_string(&snapshot(&api).await)
            .unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()));
        let event = Event::default().event("snapshot").data(data);
        Some((Ok::<_, std::convert::Infallible>(event), (api, tick)))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// `GET /api/v1/workers`: the workers connected now, as the console lists them.
async fn workers(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    Ok(json(&api.pipeline.scheduler.workers_view().await))
}

/// `GET /api/v1/searches`: the searches running now.
async fn searches(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    Ok(json(&api.pipeline.searches.views()))
}

/// A detached job as the API shows it: its id and state, the board, the search's progress with
/// its forecast (`null`s before the first bound), and once done the answer as
/// `POST /api/v1/solve` gives it.
#[derive(Debug, Serialize)]
pub(crate) struct JobView {
    id: String,
    /// `running`, `done`, `failed` or `cancelled`.
    state: &'static str,
    board: Option<Vec<u32>>,
    bound: Option<u32>,
    nodes: Option<u64>,
    bound_nodes: Option<u64>,
    predicted_nodes: Option<u64>,
    fraction: Option<f64>,
    eta_secs: Option<f64>,
    next_bound_nodes: Option<u64>,
    /// Whether `fraction` and `eta_secs` are extrapolated at the last bound's rate.
    extrapolated: bool,
    age_secs: f64,
    resumed: u32,
    /// Why a failed job failed.
    error: Option<String>,
    answer: Option<ApiAnswer>,
}

impl JobView {
    fn of(status: &v1::JobStatus) -> JobView {
        let p = status.progress.as_ref();
        let forecast = p.filter(|p| p.predicted_nodes > 0);
        JobView {
            id: status.id.clone(),
            state: match v1::JobState::try_from(status.state) {
                Ok(v1::JobState::Running) => "running",
                Ok(v1::JobState::Done) => "done",
                Ok(v1::JobState::Failed) => "failed",
                Ok(v1::JobState::Cancelled) => "cancelled",
                _ => "unknown",
            },
            board: status.board.as_ref().map(|b| b.tiles.clone()),
            bound: p.map(|p| p.bound),
            nodes: p.map(|p| p.nodes),
            bound_nodes: p.map(|p| p.nodes_in_bound),
            predicted_nodes: forecast.map(|p| p.predicted_nodes),
            fraction: forecast.map(|p| p.fraction),
            eta_secs: forecast.and_then(|p| p.eta_seconds),
            next_bound_nodes: forecast
                .map(|p| p.next_bound_predicted_nodes)
                .filter(|&n| n > 0),
            extrapolated: forecast.is_some_and(|p| p.extrapolated),
            age_secs: status.age_seconds,
            resumed: status.resumed,
            error: (!status.error.is_empty()).then(|| status.error.clone()),
            answer: status.result.as_ref().map(ApiAnswer::from_response),
        }
    }
}

/// `POST /api/v1/jobs`: the body of `POST /api/v1/solve`; 202 with the job (the search goes
/// on), or the refusal `POST /api/v1/solve` would give.
async fn submit_job(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    let request = solve_request(&body)?;
    let job = api.jobs.submit(&request, Some(peer.ip())).await?;
    let mut response = json(&JobView::of(&job.status()));
    *response.status_mut() = StatusCode::ACCEPTED;
    Ok(response)
}

/// `GET /api/v1/jobs`: every job kept, oldest first.
async fn list_jobs(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    let jobs: Vec<JobView> = api
        .jobs
        .list()
        .iter()
        .map(|j| JobView::of(&j.status()))
        .collect();
    Ok(json(&jobs))
}

/// `GET /api/v1/jobs/{id}`.
async fn get_job(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    Ok(json(&JobView::of(&api.jobs.get(&id)?.status())))
}

/// `DELETE /api/v1/jobs/{id}`: cancels the job; answers it.
async fn cancel_job(
    State(api): ApiState,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    api.authorize(&headers, peer)?;
    Ok(json(&JobView::of(&api.jobs.cancel(&id)?.status())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_solve_error_keeps_its_message_under_its_http_status_code() {
        let invalid = (StatusCode::BAD_REQUEST, "invalid", None);
        let unavailable = (
            StatusCode::SERVICE_UNAVAILABLE,
            "failed",
            Some("unavailable"),
        );
        let internal = (
            StatusCode::INTERNAL_SERVER_ERROR,
            "failed",
            Some("internal"),
        );
        let expected = vec![
            unavailable,
            invalid,
            (StatusCode::TOO_MANY_REQUESTS, "failed", Some("busy")),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid", None),
            unavailable,
            unavailable,
            unavailable,
            unavailable,
            internal,
            internal,
        ];
        for (error, (code, status, reason)) in SolveError::each_paired_with(expected) {
            let message = error.to_string();
            let refused = ApiError::from(error);
            assert_eq!(refused.code, code, "{message}");
            // As the JSON says them.
            let body = serde_json::to_value(&refused.body).unwrap();
            let said = (body["status"].as_str(), body["reason"].as_str());
            assert_eq!(said, (Some(status), reason), "{message}");
            assert_eq!(body["error"].as_str(), Some(message.as_str()));
            let retry_after = (code == StatusCode::TOO_MANY_REQUESTS).then_some(1);
            assert_eq!(refused.retry_after, retry_after, "{message}");
        }
    }
}
