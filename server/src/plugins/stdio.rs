//! A bounded sink for a guest's stdout and stderr.
//!
//! wasmtime-wasi's `MemoryOutputPipe` traps the guest once it is full, which would turn a chatty
//! plugin into a crashed one. This sink keeps the first `cap` bytes (where a panic message
//! lands) and silently drops the rest, so flooding stdout costs the guest time but nothing else.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Shared, truncating byte buffer.
#[derive(Clone, Debug)]
pub struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    cap: usize,
}

impl Capture {
    /// A sink keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Capture {
        Capture {
            buf: Arc::new(Mutex::new(Vec::new())),
            cap,
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let room = self.cap.saturating_sub(buf.len());
        buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// What was kept, lossily decoded.
    pub fn text(&self) -> String {
        let buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&buf).into_owned()
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    // A direct `OutputStream` avoids the background task wasmtime-wasi's adapter spawns per
    // stream, which every call would otherwise pay for.
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

impl OutputStream for Capture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always ready: excess bytes are dropped, never refused.
        Ok(1 << 20)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_first_bytes() {
        let c = Capture::new(8);
        c.push(b"hello ");
        c.push(b"world, and more");
        assert_eq!(c.text(), "hello wo");
    }
}
