//! What the gRPC services and the HTTP API share: one [`Shared`] per coordinator, holding the
//! cache, the cluster actor's handle, the searches running now and the limits on them.
//!
//! Each part of the request path adds its own methods to it, in its own file: the solve
//! pipeline (`solve.rs`), the flight driver (`flight.rs`), what the console and `Stats` show
//! (`console.rs`); the tonic services (`service.rs`) and the HTTP API (`http.rs`) only call them.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use tokio_util::sync::CancellationToken;

use crate::Config;
use crate::cache::Cache;
use crate::cluster::ClusterHandle;
use crate::console::{Activity, Recent};
use crate::flight::{Flight, Solvers};
use crate::flights::{Admissions, Flights};

/// State shared by both services and the HTTP API.
pub struct Shared {
    pub config: Config,
    pub cache: Cache,
    /// The cache's durable copy ([`Config::cache_dir`]): each answer cached is queued for it.
    pub(crate) store: Option<crate::store::Writer>,
    pub cluster: ClusterHandle,
    /// Searches running now, by puzzle and heuristic: identical requests share one.
    pub(crate) flights: Flights<Flight>,
    /// One solver (and its tables) per goal and heuristic, for the coordinator's own searches.
    pub(crate) solvers: Solvers,
    /// Places for requests that need a search (waiting or running): [`Config::max_searches`]
    /// in all, [`Config::max_searches_per_client`] per client address.
    pub(crate) admissions: Arc<Admissions>,
    /// Fired when the coordinator starts shutting down: from then on new requests are refused.
    pub(crate) draining: CancellationToken,
    /// Workers whose hello was accepted and whose stream is still open: [`Config::max_workers`].
    pub(crate) worker_streams: Arc<AtomicUsize>,
    /// Requests answered and their latency, for the console's charts (two atomic adds a
    /// request, whether or not a console is served).
    pub activity: Activity,
    /// The last searches to end, for the console.
    pub(crate) recent: Recent,
    /// Detached jobs, running and recently finished.
    pub(crate) jobs: crate::jobs::Jobs,
    /// Checkpoints to resume from, by puzzle: taken by the flight that searches it next.
    resumes: std::sync::Mutex<
        std::collections::HashMap<npuzzle_solver::BoardKey, crate::scheduler::Checkpoint>,
    >,
}

impl Shared {
    /// Shared state; `draining` fires when the coordinator starts to shut down.
    /// `cache` may come filled from `store`'s file; `store` gets every answer cached from now on.
    pub fn new(
        config: Config,
        cache: Cache,
        store: Option<crate::store::Writer>,
        cluster: ClusterHandle,
        draining: CancellationToken,
    ) -> Shared {
        Shared {
            draining,
            admissions: Admissions::new(config.max_searches, config.max_searches_per_client),
            cache,
            store,
            config,
            cluster,
            flights: Flights::default(),
            worker_streams: Arc::new(AtomicUsize::new(0)),
            solvers: Solvers::default(),
            activity: Activity::default(),
            recent: Recent::default(),
            jobs: Default::default(),
            resumes: Default::default(),
        }
    }

    /// The next search of puzzle `key` resumes from `checkpoint` (a detached job started
    /// again after a restart).
    pub(crate) fn resume_at(
        &self,
        key: npuzzle_solver::BoardKey,
        checkpoint: crate::scheduler::Checkpoint,
    ) {
        if let Ok(mut resumes) = self.resumes.lock() {
            resumes.insert(key, checkpoint);
        }
    }

    /// The checkpoint the search of puzzle `key` resumes from, if there is one.
    pub(crate) fn take_resume(
        &self,
        key: &npuzzle_solver::BoardKey,
    ) -> Option<crate::scheduler::Checkpoint> {
        self.resumes.lock().ok()?.remove(key)
    }

    /// Writes the answers queued for the store and closes it (blocks; once serving has ended).
    pub fn close_store(&self) {
        if let Some(store) = &self.store {
            store.close();
        }
    }
}
