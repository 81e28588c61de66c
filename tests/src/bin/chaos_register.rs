//! The register of the fault harness (`docs/faults-design.md`): a fenced integer and an
//! unfenced log of critical sections, served over TCP, every decision appended to a history.
//!
//! ```text
//! chaos_register --listen ADDR --history FILE
//! ```
//!
//! Prints `listening ADDR` once it accepts connections (ADDR with the port chosen when the
//! given port is 0), and runs until killed.

use std::process::ExitCode;

use baton_tests::chaos::register;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut listen, mut history) = (None, None);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--listen", Some(v)) => listen = Some(v),
            ("--history", Some(v)) => history = Some(v),
            _ => {
                eprintln!("usage: chaos_register --listen ADDR --history FILE");
                return ExitCode::from(2);
            }
        }
    }
    let (Some(listen), Some(history)) = (listen, history) else {
        eprintln!("usage: chaos_register --listen ADDR --history FILE");
        return ExitCode::from(2);
    };
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&history)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("chaos_register: cannot open {history}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chaos_register: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&listen).await?;
        println!("listening {}", listener.local_addr()?);
        register::serve(listener, file).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chaos_register: {listen}: {e}");
            ExitCode::FAILURE
        }
    }
}
