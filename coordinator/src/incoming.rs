//! The connections the server accepts, bounded: at most [`Limits::max_connections`] open at
//! once (past it a new one is closed at once), a connection that sends nothing within
//! [`Limits::first_byte`] of being accepted (no HTTP/2 preface, no TLS hello) is closed, and
//! with [`Limits::preface`] one that has not sent the whole HTTP/2 client preface (the 24
//! magic bytes and its first frame, the SETTINGS) by then is closed too. A peer that opens
//! sockets and says nothing, or trickles its opening a byte at a time, holds nothing for long.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::{Connected, TcpConnectInfo, TcpIncoming};

/// What [`bounded`] enforces.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: usize,
    pub first_byte: Duration,
    /// The HTTP/2 client preface must be complete within this long of accept (`None`: not
    /// checked: the HTTP port, whose requests hyper times, and TLS, whose handshake tonic
    /// times).
    pub preface: Option<Duration>,
}

/// `incoming` with [`Limits`] applied.
pub fn bounded(
    incoming: TcpIncoming,
    limits: Limits,
) -> impl Stream<Item = io::Result<Guarded<tokio::net::TcpStream>>> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    incoming.filter_map(move |accepted| match accepted {
        Ok(stream) => match Arc::clone(&open).try_acquire_owned() {
            Ok(permit) => Some(Ok(Guarded::new(stream, permit, limits))),
            Err(_) => {
                // Dropping the stream closes it; one line per refusal would let a flood fill
                // the logs, so refusals are counted instead.
                metrics::counter!(crate::metrics::CONNECTIONS_REFUSED).increment(1);
                None
            }
        },
        Err(e) => Some(Err(e)),
    })
}

/// A connection that holds a place under the limit and must speak first.
pub struct Guarded<IO> {
    inner: IO,
    /// Until the first byte arrives: when it fires, reads fail and the server drops the
    /// connection.
    first_byte: Option<Pin<Box<Sleep>>>,
    /// Until the HTTP/2 client preface is complete (see [`Limits::preface`]).
    preface: Option<Preface>,
    /// Closed for a deadline (counted in the metrics once).
    timed_out: bool,
    _permit: OwnedSemaphorePermit,
}

/// How far the HTTP/2 client preface has come: the 24-byte magic, then the first frame
/// (RFC 9113 §3.4: a SETTINGS frame), a 9-byte header giving its length.
struct Preface {
    deadline: Pin<Box<Sleep>>,
    seen: usize,
    /// Bytes the preface has in all: known once the frame header is in.
    need: usize,
    frame_header: [u8; 9],
}

const MAGIC: usize = 24;

impl Preface {
    fn new(within: Duration) -> Preface {
        Preface {
            deadline: Box::pin(tokio::time::sleep(within)),
            seen: 0,
            need: MAGIC + 9,
            frame_header: [0; 9],
        }
    }

    /// Counts `bytes`, the next ones read; true once the preface is complete.
    fn read(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            if self.seen >= self.need {
                break;
            }
            if (MAGIC..MAGIC + 9).contains(&self.seen) {
                self.frame_header[self.seen - MAGIC] = b;
                if self.seen == MAGIC + 8 {
                    let [a, b, c, ..] = self.frame_header;
                    let length = (usize::from(a) << 16) | (usize::from(b) << 8) | usize::from(c);
                    self.need = MAGIC + 9 + length;
                }
            }
            self.seen += 1;
        }
        self.seen >= self.need
    }
}

impl<IO> Guarded<IO> {
    fn new(inner: IO, permit: OwnedSemaphorePermit, limits: Limits) -> Guarded<IO> {
        Guarded {
            inner,
            first_byte: Some(Box::pin(tokio::time::sleep(limits.first_byte))),
            preface: limits.preface.map(Preface::new),
            timed_out: false,
            _permit: permit,
        }
    }

    /// The error that closes a connection that said too little too slowly; counted once, by
    /// `reason`, however often the server reads it again.
    fn timed_out(&mut self, reason: &'static str, what: &str) -> io::Error {
        if !self.timed_out {
            self.timed_out = true;
            metrics::counter!(crate::metrics::CONNECTIONS_TIMED_OUT, "reason" => reason)
                .increment(1);
        }
        io::Error::new(io::ErrorKind::TimedOut, what.to_string())
    }
}

const TRICKLED: &str = "the peer did not send its HTTP/2 preface in time";
const SILENT: &str = "the peer sent nothing after connecting";

impl<IO: AsyncRead + Unpin> AsyncRead for Guarded<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.first_byte = None;
                    if let Some(preface) = this.preface.as_mut() {
                        if preface.read(&buf.filled()[before..]) {
                            this.preface = None;
                        } else if preface.deadline.is_elapsed() {
                            return Poll::Ready(Err(this.timed_out("handshake", TRICKLED)));
                        }
                    }
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                if let Some(deadline) = this.first_byte.as_mut() {
                    ready!(deadline.as_mut().poll(cx));
                    return Poll::Ready(Err(this.timed_out("silent", SILENT)));
                }
                if let Some(preface) = this.preface.as_mut() {
                    ready!(preface.deadline.as_mut().poll(cx));
                    return Poll::Ready(Err(this.timed_out("handshake", TRICKLED)));
                }
                Poll::Pending
            }
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Guarded<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<IO: Connected<ConnectInfo = TcpConnectInfo>> Connected for Guarded<IO> {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.inner.connect_info()
    }
}

/// The same bounds on a listener that axum serves (the web console and JSON API): at most
/// [`Limits::max_connections`] open at once, of its own, and silence after accept closes a
/// connection after [`Limits::first_byte`].
pub struct BoundedListener {
    listener: tokio::net::TcpListener,
    open: Arc<Semaphore>,
    limits: Limits,
}

impl BoundedListener {
    pub fn new(listener: tokio::net::TcpListener, limits: Limits) -> BoundedListener {
        BoundedListener {
            listener,
            open: Arc::new(Semaphore::new(limits.max_connections)),
            limits,
        }
    }
}

impl axum::serve::Listener for BoundedListener {
    type Io = Guarded<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin, as axum's
                    // own listener does.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            match Arc::clone(&self.open).try_acquire_owned() {
                Ok(permit) => {
                    let _ = stream.set_nodelay(true);
                    return (Guarded::new(stream, permit, self.limits), peer);
                }
                Err(_) => {
                    metrics::counter!(crate::metrics::CONNECTIONS_REFUSED).increment(1);
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}
