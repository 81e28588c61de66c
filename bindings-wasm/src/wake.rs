//! Single-threaded wake-ups for the host loop: a notification the holder's requests raise, a
//! counter of store changes that frees waiters, and a race of the futures a waiting loop
//! watches. (JavaScript runs one thread: `Cell`s and `RefCell`s are enough.)

use core::future::{poll_fn, Future};
use core::pin::Pin;
use core::task::{Poll, Waker};
use std::cell::{Cell, RefCell};

/// A flag raised by [`Notify::notify`] and taken by the next [`Notify::notified`].
#[derive(Default)]
pub(crate) struct Notify {
    raised: Cell<bool>,
    waiters: RefCell<Vec<Waker>>,
}

impl Notify {
    pub(crate) fn notify(&self) {
        self.raised.set(true);
        for waker in self.waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Resolves once the flag is raised (at once if it is), and lowers it.
    pub(crate) async fn notified(&self) {
        poll_fn(|cx| {
            if self.raised.replace(false) {
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }
}

/// Everyone watching one value: woken whenever it changes ([`Watch::changed`]).
#[derive(Default)]
pub(crate) struct Watch {
    version: Cell<u64>,
    waiters: RefCell<Vec<Waker>>,
}

impl Watch {
    /// How many changes there have been.
    pub(crate) fn version(&self) -> u64 {
        self.version.get()
    }

    /// Counts a change and wakes every watcher.
    pub(crate) fn bump(&self) {
        self.version.set(self.version.get().wrapping_add(1));
        for waker in self.waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Resolves once the version differs from `seen`.
    pub(crate) async fn changed(&self, seen: u64) {
        poll_fn(|cx| {
            if self.version.get() != seen {
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }
}

/// Which of [`race`]'s futures finished first.
pub(crate) enum First<T> {
    /// The reply of the command in flight.
    Reply(T),
    /// The timer.
    Timer,
    /// The holder's request.
    Request,
    /// A change in the store.
    Change,
}

/// Waits for the first of: `reply` (if any), `timer`, `request`, `change` (if any); the others
/// are left as they are (the reply's future is polled again on the next race).
pub(crate) async fn race<T>(
    mut reply: Option<Pin<&mut dyn Future<Output = T>>>,
    timer: Pin<&mut dyn Future<Output = ()>>,
    request: Pin<&mut dyn Future<Output = ()>>,
    change: Option<Pin<&mut dyn Future<Output = ()>>>,
) -> First<T> {
    let (mut timer, mut request, mut change) = (timer, request, change);
    poll_fn(move |cx| {
        if let Some(reply) = reply.as_mut() {
            if let Poll::Ready(value) = reply.as_mut().poll(cx) {
                return Poll::Ready(First::Reply(value));
            }
        }
        if request.as_mut().poll(cx).is_ready() {
            return Poll::Ready(First::Request);
        }
        if let Some(change) = change.as_mut() {
            if change.as_mut().poll(cx).is_ready() {
                return Poll::Ready(First::Change);
            }
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(First::Timer);
        }
        Poll::Pending
    })
    .await
}
