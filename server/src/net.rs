//! TCP connections that tell handlers when their client has gone away.
//!
//! hyper does not drop an HTTP/1 handler whose client closed the connection while the handler
//! was still working, so a chart query would keep running in the database for nobody. The
//! [`WatchedAcceptor`] keeps every accepted socket in a [`Connections`] registry keyed by the
//! peer address; a handler that runs long work races it against [`Connections::gone`], which
//! resolves when the peer's end is closed (the socket turns readable with nothing to read).
//! Dropping the work then cancels its queries inside the database.

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
