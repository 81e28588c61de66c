//! CPU time of processes and threads on this machine, read from `/proc` (Linux only; elsewhere
//! every reading is 0 or `None`), for the benchmarks' cost columns.

use std::path::{Path, PathBuf};

/// The task (thread) directories of a process (`self` or a pid).
pub fn tasks_of(pid: &str) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
}

/// A thread's time on a CPU, in nanoseconds (`schedstat`'s first field; 0 if unreadable).
pub fn cpu_ns(task: &Path) -> u64 {
    std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A thread's context switches, voluntary and not.
pub fn switches(task: &Path) -> u64 {
    std::fs::read_to_string(task.join("status"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("ctxt_switches"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// CPU time of one process (`self` or a pid), every thread's, in nanoseconds.
pub fn process_ns(pid: &str) -> u64 {
    tasks_of(pid).map(|t| cpu_ns(&t)).sum()
}

/// CPU time of every process named `name` on this machine (`comm`: `postgres`, `mariadbd`,
/// `java`), or `None` if there is none.
pub fn server_ns(name: &str) -> Option<u64> {
    let mut total = None;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            *total.get_or_insert(0) += process_ns(&pid);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_spent_cpu() {
        if cfg!(target_os = "linux") {
            let spin: u64 = (0..1_000_000u64).map(|i| i ^ (i >> 3)).sum();
            assert!(spin > 0);
            assert!(process_ns("self") > 0);
            assert!(tasks_of("self").count() >= 1);
        }
        assert_eq!(server_ns("no-such-process-name-here"), None);
    }
}
