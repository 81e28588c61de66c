//! The Rust client of the fault harness (`docs/faults-design.md`): critical sections on one
//! lock, each reading and writing the register with its fencing token, until a deadline.
//!
//! ```text
//! chaos_worker --url URL --strategy S --name NAME --register ADDR --client ID
//!              [--seconds 60] [--ttl-ms 2000] [--hold-ms 50] [--wait-ms 10000] [--fake]
//! ```
//!
//! Each section: lock (keep-alive on), `begin`, fenced `read`, a pause of up to `--hold-ms`,
//! fenced `write`, `lost` if the guard learnt meanwhile that its lease was lost, `end`, then the
//! release and `release` with its outcome. A failed lock call is reported (`error CODE`) and
//! retried. `--fake` takes no lock at all: every client enters at once, all with token 1 (the
//! checker's own test: the register never refuses an equal token, so every overlap of two
//! sections loses an update, and the checker must see it). Prints a summary line at the
//! end; exits 0 unless the register could not be reached.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use baton::{LockRequest, Locker, Strategy};
use baton_tests::chaos::client::RegisterClient;

struct Args {
    url: String,
    strategy: Strategy,
    name: String,
    register: String,
    client: String,
    seconds: u64,
    ttl_ms: u64,
    hold_ms: u64,
    wait_ms: u64,
    fake: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        url: String::new(),
        strategy: Strategy::default(),
        name: "chaos".into(),
        register: String::new(),
        client: String::new(),
        seconds: 60,
        ttl_ms: 2_000,
        hold_ms: 50,
        wait_ms: 10_000,
        fake: false,
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        if flag == "--fake" {
            a.fake = true;
            continue;
        }
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| -> Result<u64, String> {
            v.parse()
                .map_err(|_| format!("{flag} {v:?} is not a number"))
        };
        match flag.as_str() {
            "--url" => a.url = value,
            "--strategy" => a.strategy = value.parse().map_err(|e: baton::Error| e.to_string())?,
            "--name" => a.name = value,
            "--register" => a.register = value,
            "--client" => a.client = value,
            "--seconds" => a.seconds = number(&value)?,
            "--ttl-ms" => a.ttl_ms = number(&value)?,
            "--hold-ms" => a.hold_ms = number(&value)?,
            "--wait-ms" => a.wait_ms = number(&value)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.register.is_empty() || a.client.is_empty() || (a.url.is_empty() && !a.fake) {
        return Err("--register, --client and --url (unless --fake) are needed".into());
    }
    Ok(a)
}

/// A small xorshift generator for hold times: no dependency, seeded by the client's pid.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if n == 0 {
            0
        } else {
            self.0 % n
        }
    }
}

#[derive(Default)]
struct Tally {
    sections: u64,
    refused: u64,
    lock_errors: u64,
    lost: u64,
    /// The error codes seen so far: each one's first message goes to the log.
    codes_seen: Vec<&'static str>,
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("chaos_worker: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chaos_worker: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(t) => {
            println!(
                "done client={} sections={} refused={} lost={} lock_errors={}",
                args.client, t.sections, t.refused, t.lost, t.lock_errors
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chaos_worker {}: {e}", args.client);
            ExitCode::FAILURE
        }
    }
}

fn locker(args: &Args) -> Result<Locker, String> {
    let store = baton::open_store(&args.url).map_err(|e| e.to_string())?;
    // The default retry policy, as every binding's worker has (none of them can set one): no
    // client is favoured when they contend.
    baton::LockerBuilder::new(store)
        .strategy(args.strategy)
        .ttl(Duration::from_millis(args.ttl_ms))
        .wait_timeout(Duration::from_millis(args.wait_ms))
        .build()
        .map_err(|e| e.to_string())
}

async fn run(args: &Args) -> Result<Tally, String> {
    let mut reg = RegisterClient::connect(&args.register).await?;
    let c = &args.client;
    let kind = if args.fake { "fake" } else { "rust" };
    reg.request(&format!("hello {c} {kind} {}", std::process::id()))
        .await?;
    let locker = if args.fake { None } else { Some(locker(args)?) };
    let mut rng = Rng(u64::from(std::process::id()) | 1);
    let mut tally = Tally::default();
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    while Instant::now() < deadline {
        let mut guard = match &locker {
            None => None,
            Some(l) => match l
                .lock_with(&args.name, LockRequest::new().keep_alive(true))
                .await
            {
                Ok(g) => Some(g),
                Err(e) => {
                    tally.lock_errors += 1;
                    let code = e.kind().as_str();
                    if !tally.codes_seen.contains(&code) {
                        tally.codes_seen.push(code);
                        eprintln!("chaos_worker {c}: first {code}: {e}");
                    }
                    reg.request(&format!("error {c} {code}")).await?;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let token = match &guard {
            Some(g) => g.token(),
            None => 1,
        };
        reg.request(&format!("begin {c} {token}")).await?;
        let read = reg.request(&format!("read {c} {token}")).await?;
        tokio::time::sleep(Duration::from_millis(rng.below(args.hold_ms + 1))).await;
        match read.strip_prefix("value ") {
            Some(v) => {
                let answer = reg.request(&format!("write {c} {token} {v}")).await?;
                tally.refused += u64::from(answer.starts_with("refused"));
            }
            None => tally.refused += 1,
        }
        if guard.as_ref().is_some_and(|g| g.loss().is_some()) {
            tally.lost += 1;
            reg.request(&format!("lost {c} {token}")).await?;
        }
        reg.request(&format!("end {c} {token}")).await?;
        let outcome = match &mut guard {
            None => "ok".to_owned(),
            Some(g) => match g.release().await {
                Ok(()) => "ok".to_owned(),
                Err(e) => e.kind().as_str().to_owned(),
            },
        };
        reg.request(&format!("release {c} {token} {outcome}"))
            .await?;
        tally.sections += 1;
    }
    Ok(tally)
}
