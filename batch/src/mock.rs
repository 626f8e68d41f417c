//! A loopback OpenAI-compatible mock for tests (feature `mock`): a tokio server on
//! 127.0.0.1 that answers each request with what the test's handler returns, keeps
//! connections alive, serves many at once, and records every request with the time it
//! came and the status it got.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// What the mock answers: the reply of the blocking mock of `packc_host`, so tests of
/// both hosts build answers the same way.
pub use packc_host::mock::Reply as MockReply;

/// A request the mock received.
#[derive(Clone, Debug)]
pub struct Seen {
    /// When it came, since the mock started.
    pub at: Duration,
    /// Its body (`null` when not JSON).
    pub body: Value,
    /// The status it was answered with.
    pub status: u16,
}

type Handler = dyn Fn(usize, &Value) -> MockReply + Send + Sync;

/// A running mock; it stops when dropped.
pub struct Mock {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Mock {
    /// Starts a mock on a free port; `handler(n, body)` answers the `n`-th request
    /// (from 0, in arrival order).
    pub fn start(handler: impl Fn(usize, &Value) -> MockReply + Send + Sync + 'static) -> Mock {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("an address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handler: Arc<Handler> = Arc::new(handler);
        let log = seen.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("a listener");
                let started = Instant::now();
                let serve = async {
                    loop {
                        let Ok((conn, _)) = listener.accept().await else {
                            continue;
                        };
                        let (handler, log) = (handler.clone(), log.clone());
                        tokio::spawn(async move {
                            let _ = serve(conn, handler, log, started).await;
                        });
                    }
                };
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        Mock {
            port,
            seen,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The base URL to give a host: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The requests received so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves the requests of one connection, one after another.
async fn serve(
    conn: tokio::net::TcpStream,
    handler: Arc<Handler>,
    log: Arc<Mutex<Vec<Seen>>>,
    started: Instant,
) -> std::io::Result<()> {
    let (read, mut write) = conn.into_split();
    let mut read = BufReader::new(read);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        let mut first = true;
        loop {
            line.clear();
            if read.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let l = line.trim_end();
            if l.is_empty() && !first {
                break;
            }
            first = false;
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        read.read_exact(&mut body).await?;
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let at = started.elapsed();
        let n = {
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            log.push(Seen {
                at,
                body: body.clone(),
                status: 0,
            });
            log.len() - 1
        };
        let reply = handler(n, &body);
        log.lock().unwrap_or_else(|e| e.into_inner())[n].status = reply.status;
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        let mut head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            reply.status,
            reply.body.len()
        );
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        write.write_all(head.as_bytes()).await?;
        write.write_all(reply.body.as_bytes()).await?;
    }
}
