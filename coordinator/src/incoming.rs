//! The connections the server accepts, bounded: at most [`Limits::max_connections`] open at
//! once (past it a new one is closed at once), and a connection that sends nothing within
//! [`Limits::first_byte`] of being accepted (no HTTP/2 preface, no TLS hello) is closed. A peer
//! that opens sockets and says nothing holds nothing for long.

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
}

/// `incoming` with [`Limits`] applied.
pub fn bounded(
    incoming: TcpIncoming,
    limits: Limits,
) -> impl Stream<Item = io::Result<Guarded<tokio::net::TcpStream>>> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    incoming.filter_map(move |accepted| match accepted {
        Ok(stream) => match Arc::clone(&open).try_acquire_owned() {
            Ok(permit) => Some(Ok(Guarded::new(stream, permit, limits.first_byte))),
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
    _permit: OwnedSemaphorePermit,
}

impl<IO> Guarded<IO> {
    fn new(inner: IO, permit: OwnedSemaphorePermit, first_byte: Duration) -> Guarded<IO> {
        Guarded {
            inner,
            first_byte: Some(Box::pin(tokio::time::sleep(first_byte))),
            _permit: permit,
        }
    }
}

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
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                if let Some(deadline) = this.first_byte.as_mut() {
                    ready!(deadline.as_mut().poll(cx));
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the peer sent nothing after connecting",
                    )));
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
    first_byte: Duration,
}

impl BoundedListener {
    pub fn new(listener: tokio::net::TcpListener, limits: Limits) -> BoundedListener {
        BoundedListener {
            listener,
            open: Arc::new(Semaphore::new(limits.max_connections)),
            first_byte: limits.first_byte,
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
                    return (Guarded::new(stream, permit, self.first_byte), peer);
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
