//! The tokio host of the kernel: the loop that drives a lock's life
//! ([`LockLife`](baton_kernel::LockLife)) and one-shot operations ([`driver`]), the clock it
//! reads, the tasks it starts and the cleanups it leaves running, and the owner ids (and
//! their reused slots) of each acquisition. Only I/O, timers and type conversion: every
//! decision is the kernel's.

pub(crate) mod background;
pub(crate) mod clock;
pub mod driver;
pub(crate) mod life_host;
pub(crate) mod owner;
pub(crate) mod slots;
pub(crate) mod starter;
