//! A server that stops answering, through a proxy on loopback that holds its replies: a
//! statement gives up at the client's limit (the statement timeout plus a second), after
//! earlier statements on the same connection moved that limit on, and the store recovers once
//! the server answers again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::ErrorKind;
use baton_kernel::{ColumnFilter, Command, Consistency, Failure, ReadConsistency, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::common::{base_url, drop_table, retry_while, table, while_unavailable, with_param, Db};

/// A TCP proxy on 127.0.0.1 to `upstream`, whose replies (server to client) are held while
/// its switch is on. Requests always pass.
struct Proxy {
    port: u16,
    stall: watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (stall, _) = watch::channel(false);
        let switch = stall.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (mut client_rx, mut client_tx) = client.into_split();
                let (mut server_rx, mut server_tx) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_rx, &mut server_tx).await;
                });
                let mut held = switch.subscribe();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = match server_rx.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        if held.wait_for(|on| !*on).await.is_err()
                            || client_tx.write_all(&buf[..n]).await.is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        Proxy { port, stall }
    }

    /// `url` with its host and port replaced by the proxy's.
    fn url(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").expect("a URL");
        let (auth, path) = rest.split_once('/').unwrap_or((rest, ""));
        let user = auth
            .rsplit_once('@')
            .map(|(u, _)| format!("{u}@"))
            .unwrap_or_default();
        format!("{scheme}://{user}127.0.0.1:{}/{path}", self.port)
    }
}

/// `host:port` of `url`.
fn address(url: &str) -> String {
    let rest = url.split_once("://").expect("a URL").1;
    let auth = rest.split_once('/').map_or(rest, |(a, _)| a);
    let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    host.split('?').next().unwrap_or(host).to_owned()
}

async fn a_server_that_stops_answering(db: Db) {
    let Some(base) = base_url(db) else {
        return;
    };
    let proxy = Proxy::start(address(&base)).await;
    let direct = with_param(&base, &format!("table={}", table()));
    let url = with_param(&proxy.url(&direct), "timeout=1s");
    let store = baton::open_store(&url).expect("opens");
    let locker = baton::LockerBuilder::new(Arc::clone(&store))
        .build()
        .expect("valid");
    // A connection first (opening one may take longer than the 1 s limit lets an attempt wait).
    while_unavailable(|| async { locker.lock("stalled").await?.release().await })
        .await
        .expect("the store serves a lock and its release");
    // Statements that answer, for a second: each moves the connection's time limit on (a
    // limit left where the first statement set it would end the stalled one a second early).
    let busy = Instant::now();
    while busy.elapsed() < Duration::from_secs(1) {
        locker
            .lock("stalled")
            .await
            .expect("lock")
            .release()
            .await
            .expect("release");
    }

    proxy.stall.send_replace(true);
    let read = Command::Read {
        row: "stalled".into(),
        filter: ColumnFilter::All,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    };
    let started = Instant::now();
    let reply = tokio::time::timeout(Duration::from_secs(20), store.execute(read.clone()))
        .await
        .expect("the statement must give up by itself");
    let waited = started.elapsed();
    match &reply {
        Reply::Failed(Failure::Timeout(message)) => {
            assert!(
                message.contains("no answer from the store within"),
                "{message}"
            );
        }
        other => panic!("{db:?}: a held reply must time out, got {other:?}"),
    }
    // The client's limit is the statement timeout (1 s) plus a second.
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(4),
        "{db:?}: gave up after {waited:?}"
    );

    // Through the locker: a typed error in bounded time, not a hang.
    let started = Instant::now();
    let e = locker.lock("stalled").await.expect_err("no answer");
    assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{db:?}: {e}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{db:?}: {:?}",
        started.elapsed()
    );

    // Answered again: the store serves the next command, on a new connection (whose opening
    // may take more than one attempt's second: "no connection in time" until then).
    proxy.stall.send_replace(false);
    let reply = retry_while(
        || store.execute(read.clone()),
        |reply| {
            matches!(reply, Reply::Failed(Failure::NotApplied(m))
                if m.starts_with("no connection became available"))
        },
    )
    .await;
    assert!(
        matches!(reply, Reply::Cells(_)),
        "{db:?}: after the stall: {reply:?}"
    );
    drop(locker);
    drop(store);
    drop_table(&direct).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_statements_give_up_at_the_client_limit() {
    a_server_that_stops_answering(Db::Postgres).await;
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_statements_give_up_at_the_client_limit() {
    a_server_that_stops_answering(Db::MySql).await;
}
