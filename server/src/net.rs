//! TCP connections that tell handlers when their client has gone away.
//!
//! hyper does not drop an HTTP/1 handler whose client closed the connection while the handler
//! was still working, so a chart query would keep running in the database for nobody. The
//! [`WatchedAcceptor`] keeps every accepted socket in a [`Connections`] registry keyed by the
//! peer address; a handler that runs long work races it against [`Connections::gone`], which
//! resolves when the peer's end is closed (the socket turns readable with nothing to read).
//! Dropping the work then cancels its queries inside the database.
//!
//! [`serve`] runs the HTTP server over it: poem's own server configures no header-read
//! timeout, so a client could hold a connection forever by trickling a request's headers
//! (slow-loris). hyper's timer-based `header_read_timeout` closes such connections.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, ready};

use poem::http::uri::Scheme;
use poem::listener::Acceptor;
use poem::web::{LocalAddr, RemoteAddr};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// The open client connections, by peer address.
#[derive(Debug, Default)]
pub struct Connections {
    open: Mutex<HashMap<SocketAddr, Weak<TcpStream>>>,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, Weak<TcpStream>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves once the client at `peer` has closed its connection. Never resolves for an
    /// unknown peer, or while the client keeps sending (pipelined requests, HTTP/2 frames):
    /// only an orderly close or a reset is taken as "gone".
    pub async fn gone(&self, peer: Option<&SocketAddr>) {
        let stream = peer.and_then(|p| self.lock().get(p).and_then(Weak::upgrade));
        let Some(stream) = stream else {
            return std::future::pending().await;
        };
        let mut probe = [0u8; 1];
        match stream.peek(&mut probe).await {
            Ok(0) | Err(_) => {}
            Ok(_) => std::future::pending().await,
        }
    }
}

/// A TCP acceptor registering each connection in [`Connections`].
pub struct WatchedAcceptor {
    listener: TcpListener,
    local: LocalAddr,
    connections: Arc<Connections>,
}

impl WatchedAcceptor {
    /// Binds `addr`.
    pub async fn bind(addr: SocketAddr, connections: Arc<Connections>) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let local = LocalAddr(listener.local_addr()?.into());
        Ok(WatchedAcceptor {
            listener,
            local,
            connections,
        })
    }

    /// The bound address.
    pub fn local_socket_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl Acceptor for WatchedAcceptor {
    type Io = WatchedStream;

    fn local_addr(&self) -> Vec<LocalAddr> {
        vec![self.local.clone()]
    }

    async fn accept(&mut self) -> io::Result<(WatchedStream, LocalAddr, RemoteAddr, Scheme)> {
        let (stream, peer) = self.listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let stream = Arc::new(stream);
        self.connections
            .lock()
            .insert(peer, Arc::downgrade(&stream));
        Ok((
            WatchedStream {
                stream,
                peer,
                connections: self.connections.clone(),
            },
            self.local.clone(),
            RemoteAddr(peer.into()),
            Scheme::HTTP,
        ))
    }
}

/// An accepted connection; leaves the registry when dropped.
pub struct WatchedStream {
    stream: Arc<TcpStream>,
    peer: SocketAddr,
    connections: Arc<Connections>,
}

impl Drop for WatchedStream {
    fn drop(&mut self) {
        let mut open = self.connections.lock();
        if open
            .get(&self.peer)
            .is_some_and(|w| w.as_ptr() == Arc::as_ptr(&self.stream))
        {
            open.remove(&self.peer);
        }
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.stream.poll_read_ready(cx))?;
            match self.stream.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return Poll::Ready(other),
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_write_vectored(bufs) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return Poll::Ready(other),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Writes go straight to the socket.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(socket2::SockRef::from(&*self.stream).shutdown(std::net::Shutdown::Write))
    }
}

/// Serves `app` on `acceptor` until `shutdown` resolves, then lets open connections finish for
/// up to `grace`. Each HTTP/1 connection must deliver every request's headers within
/// `header_timeout` of starting to wait for them (an idle keep-alive connection is closed
/// after the same time).
pub async fn serve<E>(
    mut acceptor: WatchedAcceptor,
    app: E,
    shutdown: impl std::future::Future<Output = ()>,
    grace: std::time::Duration,
    header_timeout: std::time::Duration,
) -> io::Result<()>
where
    E: poem::Endpoint + 'static,
{
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    type Body = http_body_util::combinators::BoxBody<bytes::Bytes, io::Error>;
    let app = Arc::new(poem::EndpointExt::map_to_response(app));
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            a = acceptor.accept() => a,
        };
        let (io, local, remote, scheme) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(message = "Accept failed.", error = %e);
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let app = app.clone();
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let app = app.clone();
                let req = poem::Request::from((req, local.clone(), remote.clone(), scheme.clone()));
                async move {
                    let resp = poem::Endpoint::get_response(&*app, req).await;
                    Ok::<_, std::convert::Infallible>(hyper::Response::<Body>::from(resp))
                }
            });
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(io), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(message = "Connection ended with an error.", error = %e);
            }
        });
    }
    drop(acceptor);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(message = "Shutdown grace period over with connections still open.");
    }
    Ok(())
}
