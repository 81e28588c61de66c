//! The fault harness's proxy (`docs/faults-design.md`): a TCP relay between clients and a
//! store that can hold bytes back, for late delivery as a pooler or a socket buffer does it.
//!
//! ```text
//! chaos_proxy --listen ADDR --to ADDR --control ADDR
//! ```
//!
//! Modes, set by a line on the control port (answered `ok`):
//! - `normal`: bytes pass as they come;
//! - `delay MS`: every chunk, either way, is delivered MS milliseconds after it arrived (a slow
//!   link: this machine's kernel has no `netem`);
//! - `late MS`: chunks from clients are delivered MS milliseconds after they arrived, and a
//!   client that hangs up (its request timed out, or it exited) does not stop them: the proxy
//!   keeps the server connection open until the last held chunk was delivered, so statements
//!   the client gave up on are applied after it left.
//!
//! A chunk keeps the mode it arrived in; order within a connection is always kept. Prints
//! `listening ADDR` when ready; runs until killed.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The mode, packed: the top two bits say which (0 normal, 1 delay, 2 late), the rest the delay
/// in milliseconds.
#[derive(Default)]
struct Mode(AtomicU64);

const DELAY: u64 = 1 << 62;
const LATE: u64 = 2 << 62;
const MS: u64 = (1 << 62) - 1;

impl Mode {
    fn set(&self, line: &str) -> Result<(), String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let ms = |s: &str| -> Result<u64, String> {
            s.parse::<u64>()
                .ok()
                .filter(|&v| v <= 3_600_000)
                .ok_or_else(|| format!("{s:?} is not a delay in ms (0 to 3600000)"))
        };
        let packed = match fields[..] {
            ["normal"] => 0,
            ["delay", v] => DELAY | ms(v)?,
            ["late", v] => LATE | ms(v)?,
            _ => {
                return Err(format!(
                    "unknown mode {line:?}: normal, delay MS or late MS"
                ))
            }
        };
        self.0.store(packed, Ordering::SeqCst);
        Ok(())
    }

    /// The delay for a chunk going to the server (`upstream`) or back, and whether the chunk
    /// outlives its client.
    fn now(&self, upstream: bool) -> (Duration, bool) {
        let packed = self.0.load(Ordering::SeqCst);
        let ms = Duration::from_millis(packed & MS);
        match packed & !MS {
            DELAY => (ms, false),
            LATE if upstream => (ms, true),
            _ => (Duration::ZERO, false),
        }
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut listen, mut to, mut control) = (None, None, None);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--listen", Some(v)) => listen = Some(v),
            ("--to", Some(v)) => to = Some(v),
            ("--control", Some(v)) => control = Some(v),
            _ => {
                eprintln!("usage: chaos_proxy --listen ADDR --to ADDR --control ADDR");
                return ExitCode::from(2);
            }
        }
    }
    let (Some(listen), Some(to), Some(control)) = (listen, to, control) else {
        eprintln!("usage: chaos_proxy --listen ADDR --to ADDR --control ADDR");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chaos_proxy: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(&listen, to, &control)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chaos_proxy: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(listen: &str, to: String, control: &str) -> Result<(), String> {
    let clients = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("{listen}: {e}"))?;
    let controls = TcpListener::bind(control)
        .await
        .map_err(|e| format!("{control}: {e}"))?;
    let mode = Arc::new(Mode::default());
    println!("listening {listen} -> {to}, control {control}");
    let control_mode = Arc::clone(&mode);
    tokio::spawn(async move {
        while let Ok((stream, _)) = controls.accept().await {
            tokio::spawn(control_connection(stream, Arc::clone(&control_mode)));
        }
    });
    loop {
        let (client, _) = clients
            .accept()
            .await
            .map_err(|e| format!("accept on {listen}: {e}"))?;
        let to = to.clone();
        let mode = Arc::clone(&mode);
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(&to).await {
                relay(client, server, mode).await;
            }
        });
    }
}

async fn control_connection(stream: TcpStream, mode: Arc<Mode>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let answer = match mode.set(line.trim()) {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!("bad {e}"),
        };
        if write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// A chunk and when to deliver it.
struct Held {
    at: Instant,
    bytes: Vec<u8>,
    outlives_client: bool,
}

async fn relay(client: TcpStream, server: TcpStream, mode: Arc<Mode>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Chunks a client sent that must outlive it keep the server connection open.
    let outliving = Arc::new(AtomicU64::new(0));

    let (up_tx, mut up_rx) = mpsc::unbounded_channel::<Held>();
    let up_mode = Arc::clone(&mode);
    let up_outliving = Arc::clone(&outliving);
    let client_gone = Arc::new(tokio::sync::Notify::new());
    let gone = Arc::clone(&client_gone);
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let (delay, outlives_client) = up_mode.now(true);
                    if outlives_client {
                        up_outliving.fetch_add(1, Ordering::SeqCst);
                    }
                    let held = Held {
                        at: Instant::now() + delay,
                        bytes: buf[..n].to_vec(),
                        outlives_client,
                    };
                    if up_tx.send(held).is_err() {
                        break;
                    }
                }
            }
        }
        gone.notify_one();
    });
    let up_outliving = Arc::clone(&outliving);
    let upstream = tokio::spawn(async move {
        // Delivers in order; when the client is gone, only chunks that outlive it are still
        // delivered (the queue ends once the reader above has dropped its sender).
        while let Some(held) = up_rx.recv().await {
            tokio::time::sleep_until(held.at).await;
            if server_write.write_all(&held.bytes).await.is_err() {
                break;
            }
            if held.outlives_client {
                up_outliving.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _ = server_write.shutdown().await;
    });

    let (down_tx, mut down_rx) = mpsc::unbounded_channel::<Held>();
    let down_mode = Arc::clone(&mode);
    let downstream_read = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let (delay, _) = down_mode.now(false);
                    let held = Held {
                        at: Instant::now() + delay,
                        bytes: buf[..n].to_vec(),
                        outlives_client: false,
                    };
                    if down_tx.send(held).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let downstream = tokio::spawn(async move {
        while let Some(held) = down_rx.recv().await {
            tokio::time::sleep_until(held.at).await;
            if client_write.write_all(&held.bytes).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    });

    client_gone.notified().await;
    // The client hung up. Without held chunks that outlive it, the server connection goes now;
    // with them, once they were delivered (the upstream task ends by itself then).
    if outliving.load(Ordering::SeqCst) == 0 {
        upstream.abort();
    } else {
        let _ = upstream.await;
    }
    downstream_read.abort();
    downstream.abort();
}
