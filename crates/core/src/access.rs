//! Who may touch a storage's bytes, and when: the protocol that keeps two threads from racing
//! on tensor data, cheap enough for calls on one-element tensors.
//!
//! # The protocol
//!
//! Every storage is in one of three modes ([`AccessControl::mode`]):
//!
//! * **owned** by the thread that created it (the mode holds that thread's token). The owner
//!   reads and writes without a lock: it raises the storage's `busy` flag, issues one
//!   sequentially consistent fence for the whole call, checks that it still owns the storage,
//!   and lowers the flag when done. No other thread touches the bytes while the storage is
//!   owned.
//! * **revoking**: another thread wants the data. It switched the mode from owned to revoking,
//!   fenced, and waits for the owner's `busy` flag to fall.
//! * **shared**: every thread, the former owner included, takes the storage's reader–writer
//!   lock. A storage never leaves this mode.
//!
//! Most storages are created, used and dropped by one thread, so most calls take no lock and
//! make no atomic read-modify-write: a tiny operator call over three storages paid six (two
//! per lock) where it now pays one fence. A storage handed to another thread costs that thread
//! one revocation, once.
//!
//! Why the owner and a revoker cannot both go ahead (the store-buffering pattern, ordered by
//! the two fences): the owner stores `busy = true`, fences, loads the mode; the revoker stores
//! the revoking mode, fences, loads `busy`. The fences are ordered one way or the other in the
//! single total order of sequentially consistent fences. If the owner's comes first, the
//! revoker sees `busy = true` (or a later `false`, released after the owner's access) and
//! waits; if the revoker's comes first, the owner sees the mode changed and takes the lock
//! instead. Whoever waits synchronises with the other through release/acquire, so the owner's
//! accesses happen before every access made under the lock afterwards. Threads that find a
//! storage revoking wait until the revoker publishes the shared mode (release/acquire again),
//! so nobody takes the lock before the owner is out.
//!
//! # Deadlock freedom
//!
//! A call takes all its storages at once ([`StorageLocks::acquire`]): first it waits out every
//! revocation it needs while holding nothing, then it raises the `busy` flags of the storages it
//! owns, then it takes the locks of the shared ones in address order. Only threads holding
//! nothing wait on a `busy` flag, and locks are taken in one global order, so no cycle of
//! waiting threads can form. A thread may not start a second access while it holds one (a
//! kernel calling back into operators with data locked): that is refused with an error.

use crate::storage::{Storage, StorageData, StorageImpl};
use crate::{Error, Result};
use smallvec::SmallVec;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The mode of a storage every thread locks.
const SHARED: u64 = 0;
/// The mode of a storage whose owner is being waited out.
const REVOKING: u64 = 1;
/// The first thread token (tokens are never reused).
const FIRST_TOKEN: u64 = 2;

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(FIRST_TOKEN);

/// This thread's identity and whether it holds a data access.
struct ThreadAccess {
    /// 0 until the thread first needs a token.
    token: Cell<u64>,
    holding: Cell<bool>,
}

thread_local! {
    static THREAD: ThreadAccess = const {
        ThreadAccess {
            token: Cell::new(0),
            holding: Cell::new(false),
        }
    };
}

/// The current thread's token (assigned on first use, never reused).
#[inline]
fn current_token() -> u64 {
    THREAD.with(|t| match t.token.get() {
        0 => {
            let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
            t.token.set(token);
            token
        }
        token => token,
    })
}

/// Marks this thread as holding a data access, or refuses a nested one; returns the thread's
/// token.
#[inline]
fn enter() -> Result<u64> {
    THREAD.with(|t| {
        if t.holding.get() {
            return Err(Error::runtime(
                "internal error: a storage was accessed while this thread already holds storage locks (a kernel called back into an operator with data locks held); this would deadlock",
            ));
        }
        t.holding.set(true);
        Ok(match t.token.get() {
            0 => {
                let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
                t.token.set(token);
                token
            }
            token => token,
        })
    })
}

#[inline]
fn leave() {
    THREAD.with(|t| t.holding.set(false));
}

/// Waits a little longer each time it is called: spins first, then yields, then sleeps
/// (waiting for another thread's access can last as long as a large kernel).
struct Backoff(u32);

impl Backoff {
    fn wait(&mut self) {
        self.0 = self.0.saturating_add(1);
        match self.0 {
            0..64 => std::hint::spin_loop(),
            64..1024 => std::thread::yield_now(),
            _ => std::thread::sleep(std::time::Duration::from_micros(50)),
        }
    }
}

/// The per-storage state of the protocol (see the module documentation).
pub(crate) struct AccessControl {
    /// The owning thread's token, [`REVOKING`] or [`SHARED`].
    mode: AtomicU64,
    /// Raised by the owner while it accesses the data without the lock.
    busy: AtomicBool,
    /// Taken by everyone once the storage is shared.
    lock: RwLock<()>,
}

impl AccessControl {
    /// The state of a new storage, owned by the calling thread.
    #[inline]
    pub(crate) fn owned_by_current_thread() -> AccessControl {
        AccessControl {
            mode: AtomicU64::new(current_token()),
            busy: AtomicBool::new(false),
            lock: RwLock::new(()),
        }
    }

    /// Whether the storage is still owned by its creating thread (for tests and diagnostics).
    pub(crate) fn is_owned(&self) -> bool {
        self.mode.load(Ordering::Relaxed) >= FIRST_TOKEN
    }

    /// Makes the storage shared, waiting out its owner's access if another thread owns it.
    /// The caller (not the owner) must hold no data access of its own but its thread flag.
    fn make_shared(&self) {
        let mut seen = self.mode.load(Ordering::Acquire);
        let mut backoff = Backoff(0);
        loop {
            match seen {
                SHARED => return,
                REVOKING => {
                    backoff.wait();
                    seen = self.mode.load(Ordering::Acquire);
                }
                owner => match self.mode.compare_exchange(
                    owner,
                    REVOKING,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        // Pairs with the owner's fence (see the module documentation).
                        fence(Ordering::SeqCst);
                        while self.busy.load(Ordering::Acquire) {
                            backoff.wait();
                        }
                        self.mode.store(SHARED, Ordering::Release);
                        return;
                    }
                    Err(now) => seen = now,
                },
            }
        }
    }
}

/// Storages all owned by the calling thread, held without locks: the fast path of
/// [`crate::linear`], for calls whose storages are few and (almost always) owned. The first
/// storage is written, the others read.
pub(crate) struct OwnedHold<'a> {
    first: &'a StorageImpl,
    rest: &'a [&'a StorageImpl],
}

impl<'a> OwnedHold<'a> {
    /// Holds `first` and `rest` if this thread owns every one of them; `Ok(None)` (holding
    /// nothing) if it does not, so that the caller takes them through [`StorageLocks`]. Errors
    /// on a nested access, as [`StorageLocks::acquire`] does.
    #[inline]
    pub(crate) fn try_acquire(
        first: &'a StorageImpl,
        rest: &'a [&'a StorageImpl],
    ) -> Result<Option<OwnedHold<'a>>> {
        let owned_by = |me: u64| {
            first.access.mode.load(Ordering::Relaxed) == me
                && rest
                    .iter()
                    .all(|s| s.access.mode.load(Ordering::Relaxed) == me)
        };
        let me = enter()?;
        if !owned_by(me) {
            leave();
            return Ok(None);
        }
        // Raising a flag twice (operands sharing a storage) is harmless: all are lowered
        // together when the hold is dropped.
        first.access.busy.store(true, Ordering::Relaxed);
        for s in rest {
            s.access.busy.store(true, Ordering::Relaxed);
        }
        let hold = OwnedHold { first, rest };
        // See the module documentation: pairs with a revoker's fence.
        fence(Ordering::SeqCst);
        if owned_by(me) {
            Ok(Some(hold))
        } else {
            // Revoked meanwhile: dropping the hold lowers the flags, for the revoker.
            Ok(None)
        }
    }

    /// The written storage's data.
    ///
    /// # Safety
    ///
    /// No reference obtained from [`OwnedHold::read`] for the same storage may be alive
    /// while the returned one is, and it must not outlive the hold.
    #[inline]
    pub(crate) unsafe fn write_first(&self) -> &'a mut StorageData {
        // SAFETY: the storage is held (owned, under its busy flag) and no other thread touches
        // it meanwhile; the caller guarantees no other reference to it is alive.
        unsafe { &mut *self.first.data.get() }
    }

    /// A read storage's data (`None` past the end of `rest`).
    ///
    /// # Safety
    ///
    /// The storage must not be the written one while a reference from
    /// [`OwnedHold::write_first`] is alive, and the result must not outlive the hold.
    #[inline]
    pub(crate) unsafe fn read(&self, i: usize) -> Option<&'a StorageData> {
        // SAFETY: held (owned, under its busy flag); no mutable reference to it is alive (the
        // caller's guarantee).
        self.rest.get(i).map(|s| unsafe { &*s.data.get() })
    }
}

impl Drop for OwnedHold<'_> {
    #[inline]
    fn drop(&mut self) {
        // Publishes the accesses to a revoker waiting for the flags.
        self.first.access.busy.store(false, Ordering::Release);
        for s in self.rest {
            s.access.busy.store(false, Ordering::Release);
        }
        leave();
    }
}

/// Whether a tensor's data is read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Shared access.
    Read,
    /// Exclusive access.
    Write,
}

/// How one distinct storage of a [`StorageLocks`] is held.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Not yet held.
    Pending,
    /// Owned by this thread, accessed under its `busy` flag.
    Owned,
    /// Shared, locked (the guard is in [`StorageLocks::guards`]).
    Locked,
}

/// One distinct storage of a call. Small and plain: it is written once per storage per call.
struct Held<'a> {
    storage: &'a StorageImpl,
    access: Access,
    hold: Hold,
}

impl Held<'_> {
    /// Lowers the busy flag of an owned storage (the lock of a shared one is released with
    /// its guard).
    fn release(&mut self) {
        if self.hold == Hold::Owned {
            // Publishes this access to a revoker waiting for the flag.
            self.storage.access.busy.store(false, Ordering::Release);
        }
        self.hold = Hold::Pending;
    }
}

/// The lock of a shared storage, held.
enum Guard<'a> {
    Read(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
    Write(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
}

/// Access to several storages taken together (see the module documentation): shared for
/// reads, exclusive for writes, dropped together.
pub struct StorageLocks<'a> {
    /// Distinct storages, in the order of their first request.
    held: SmallVec<[Held<'a>; 4]>,
    /// For each request, the index of its storage in `held`.
    slot_of: SmallVec<[u8; 8]>,
    /// The locks of the shared storages (none when this thread owns every storage).
    guards: SmallVec<[Guard<'a>; 2]>,
    /// Whether this value marked the thread as holding an access (cleared on drop).
    entered: bool,
}

impl<'a> StorageLocks<'a> {
    /// Takes every storage of `requests` at once; a storage requested for both reading and
    /// writing is taken once, exclusively.
    pub fn lock(requests: &[(&'a Storage, Access)]) -> Result<StorageLocks<'a>> {
        let mut locks = StorageLocks::unlocked();
        locks.acquire(requests)?;
        Ok(locks)
    }

    /// An empty set, to [`StorageLocks::acquire`] into. Infallible, so the caller can build it
    /// in place (a `Result` of it is moved out through `memcpy`).
    pub(crate) fn unlocked() -> StorageLocks<'a> {
        StorageLocks {
            held: SmallVec::new(),
            slot_of: SmallVec::new(),
            guards: SmallVec::new(),
            entered: false,
        }
    }

    /// [`StorageLocks::lock`] into a value the caller already holds (an empty set).
    pub(crate) fn acquire(&mut self, requests: &[(&'a Storage, Access)]) -> Result<()> {
        if self.entered {
            return Err(Error::runtime(
                "internal error: storage locks acquired twice",
            ));
        }
        if requests.len() > usize::from(u8::MAX) {
            return Err(Error::runtime(format!(
                "internal error: {} tensors accessed in one call (at most {} are supported)",
                requests.len(),
                u8::MAX
            )));
        }
        let me = enter()?;
        self.entered = true;
        // Distinct storages, in request order, with the strongest access asked of each.
        for (storage, access) in requests {
            let s = storage.inner();
            let at = match self.held.iter().position(|h| std::ptr::eq(h.storage, s)) {
                Some(at) => {
                    if let Some(h) = self.held.get_mut(at)
                        && *access == Access::Write
                    {
                        h.access = Access::Write;
                    }
                    at
                }
                None => {
                    self.held.push(Held {
                        storage: s,
                        access: *access,
                        hold: Hold::Pending,
                    });
                    self.held.len() - 1
                }
            };
            // `at` < requests.len() <= u8::MAX (checked above).
            self.slot_of.push(at as u8);
        }
        'attempt: loop {
            // 1. Wait out every owner but this thread, holding nothing.
            for h in &self.held {
                if h.storage.access.mode.load(Ordering::Acquire) != me {
                    h.storage.access.make_shared();
                }
            }
            // 2. Raise the flags of the storages this thread owns, fence once, and check that
            //    none was revoked meanwhile (if one was, lower them all and start again).
            let mut owned = false;
            for h in &mut self.held {
                if h.storage.access.mode.load(Ordering::Relaxed) == me {
                    h.storage.access.busy.store(true, Ordering::Relaxed);
                    h.hold = Hold::Owned;
                    owned = true;
                }
            }
            if owned {
                fence(Ordering::SeqCst);
                let revoked = self.held.iter().any(|h| {
                    h.hold == Hold::Owned && h.storage.access.mode.load(Ordering::Relaxed) != me
                });
                if revoked {
                    self.held.iter_mut().for_each(Held::release);
                    continue 'attempt;
                }
            }
            // 3. Lock the shared ones, in address order.
            let mut order: SmallVec<[u8; 8]> = SmallVec::new();
            for (i, h) in self.held.iter().enumerate() {
                if h.hold == Hold::Pending {
                    // i < held.len() <= requests.len() <= u8::MAX.
                    order.push(i as u8);
                }
            }
            if order.len() > 1 {
                let held = &self.held;
                order.sort_unstable_by_key(|i| {
                    held.get(usize::from(*i)).map(|h| address(h.storage))
                });
            }
            for i in order {
                let Some(h) = self.held.get_mut(usize::from(i)) else {
                    continue;
                };
                let lock = &h.storage.access.lock;
                self.guards.push(match h.access {
                    Access::Read => {
                        Guard::Read(lock.read().unwrap_or_else(PoisonError::into_inner))
                    }
                    Access::Write => {
                        Guard::Write(lock.write().unwrap_or_else(PoisonError::into_inner))
                    }
                });
                h.hold = Hold::Locked;
            }
            return Ok(());
        }
    }

    fn held(&self, i: usize) -> Result<&Held<'a>> {
        self.slot_of
            .get(i)
            .and_then(|s| self.held.get(usize::from(*s)))
            .ok_or_else(|| bad_request(i))
    }

    /// The data of request `i`.
    pub fn data(&self, i: usize) -> Result<&StorageData> {
        let h = self.held(i)?;
        // SAFETY: `h`'s storage is held (owned under its busy flag, or locked) for as long as
        // `self` lives, and mutable references to it are only handed out from `&mut self`.
        Ok(unsafe { &*h.storage.data.get() })
    }

    /// The data of request `i`, mutably (the request must have asked for `Write`, or share its
    /// storage with one that did).
    pub fn data_mut(&mut self, i: usize) -> Result<&mut StorageData> {
        let h = self.held(i)?;
        if h.access != Access::Write {
            return Err(Error::runtime(format!(
                "internal error: operand {i} was locked for reading but written"
            )));
        }
        // SAFETY: `h`'s storage is held exclusively (owned under its busy flag, or
        // write-locked) for as long as `self` lives; the `&mut self` borrow keeps every other
        // reference handed out by `self` dead while this one lives.
        Ok(unsafe { &mut *h.storage.data.get() })
    }

    /// Splits the locks for a computation: mutable data for each request in `writes`, shared
    /// data for every request (`None` for those sharing a storage with a written request, which
    /// must be read through the written data). Written requests must be in distinct storages.
    #[allow(clippy::type_complexity)]
    pub fn split_mut(
        &mut self,
        writes: &[usize],
    ) -> Result<(
        SmallVec<[&mut StorageData; 2]>,
        SmallVec<[Option<&StorageData>; 4]>,
    )> {
        let mut write_slots: SmallVec<[usize; 2]> = SmallVec::new();
        for &w in writes {
            let slot = self.slot(w)?;
            if write_slots.contains(&slot) {
                return Err(Error::runtime(
                    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.",
                ));
            }
            if self.held.get(slot).map(|h| h.access) != Some(Access::Write) {
                return Err(Error::runtime(format!(
                    "internal error: storage {slot} was locked for reading but is written"
                )));
            }
            write_slots.push(slot);
        }
        let mut written: SmallVec<[Option<&mut StorageData>; 2]> =
            write_slots.iter().map(|_| None).collect();
        let mut shared: SmallVec<[Option<&StorageData>; 4]> = SmallVec::new();
        for (slot, h) in self.held.iter().enumerate() {
            let cell = h.storage.data.get();
            match write_slots.iter().position(|s| *s == slot) {
                Some(k) => {
                    // SAFETY: this storage is held exclusively (checked above) while `self` is
                    // mutably borrowed, and this is the only reference made to it here.
                    written[k] = Some(unsafe { &mut *cell });
                    shared.push(None);
                }
                // SAFETY: held at least for reading while `self` is borrowed; no mutable
                // reference to this storage is made here.
                None => shared.push(Some(unsafe { &*cell })),
            }
        }
        let written: Option<SmallVec<[&mut StorageData; 2]>> = written.into_iter().collect();
        let written = written
            .ok_or_else(|| Error::runtime("internal error: a written storage has no lock"))?;
        let per_request = self
            .slot_of
            .iter()
            .map(|slot| shared.get(usize::from(*slot)).copied().flatten())
            .collect();
        Ok((written, per_request))
    }

    /// [`StorageLocks::split_mut`] for the common case of one written request, request 0 (an
    /// elementwise output), on host storage: its bytes mutably, with the bytes of every other
    /// request pushed onto `rest` in order (`None` where it shares request 0's storage).
    pub fn split_first_host_mut<'s>(
        &'s mut self,
        rest: &mut SmallVec<[Option<&'s [u8]>; 4]>,
    ) -> Result<&'s mut [u8]> {
        let mut data: SmallVec<[Option<&'s StorageData>; 8]> = SmallVec::new();
        let out = self.split_first_data_mut(&mut data)?;
        for d in data {
            rest.push(d.map(StorageData::host_bytes).transpose()?);
        }
        out.host_bytes_mut()
    }

    /// [`StorageLocks::split_first_host_mut`] for any storage: the data of request 0 mutably,
    /// with the data of every other request pushed onto `rest` in order (`None` where it shares
    /// request 0's storage).
    pub fn split_first_data_mut<'s>(
        &'s mut self,
        rest: &mut SmallVec<[Option<&'s StorageData>; 8]>,
    ) -> Result<&'s mut StorageData> {
        let written_slot = self.slot(0)?;
        let out = self.held.get(written_slot).ok_or_else(|| bad_request(0))?;
        if out.access != Access::Write {
            return Err(Error::runtime(
                "internal error: operand 0 was locked for reading but is written",
            ));
        }
        for slot in &self.slot_of[1..] {
            let slot = usize::from(*slot);
            rest.push(if slot == written_slot {
                None
            } else {
                let h = self.held.get(slot).ok_or_else(|| bad_request(slot))?;
                // SAFETY: held at least for reading while `self` is borrowed; the only mutable
                // reference made here is to another storage (`written_slot`).
                Some(unsafe { &*h.storage.data.get() })
            });
        }
        // SAFETY: held exclusively (checked above) while `self` is mutably borrowed; every
        // other reference made here is to another storage.
        Ok(unsafe { &mut *out.storage.data.get() })
    }

    /// Whether requests `i` and `j` share a storage.
    pub fn same_storage(&self, i: usize, j: usize) -> bool {
        matches!((self.slot_of.get(i), self.slot_of.get(j)), (Some(a), Some(b)) if a == b)
    }

    fn slot(&self, i: usize) -> Result<usize> {
        self.slot_of
            .get(i)
            .map(|s| usize::from(*s))
            .ok_or_else(|| bad_request(i))
    }
}

impl Drop for StorageLocks<'_> {
    fn drop(&mut self) {
        self.held.iter_mut().for_each(Held::release);
        self.guards.clear();
        if self.entered {
            leave();
        }
    }
}

/// A storage's address: the order in which locks are taken.
fn address(s: &StorageImpl) -> usize {
    std::ptr::from_ref(s) as usize
}

fn bad_request(i: usize) -> Error {
    Error::runtime(format!("internal error: no storage lock for operand {i}"))
}

/// Access to one storage's data (see [`Storage::read`] and [`Storage::write`]).
pub struct StorageGuard<'a> {
    storage: &'a StorageImpl,
    access: Access,
    _locks: StorageLocks<'a>,
}

impl<'a> StorageGuard<'a> {
    pub(crate) fn new(storage: &'a Storage, access: Access) -> Result<StorageGuard<'a>> {
        Ok(StorageGuard {
            storage: storage.inner(),
            access,
            _locks: StorageLocks::lock(&[(storage, access)])?,
        })
    }

    /// The data.
    pub fn data(&self) -> &StorageData {
        // SAFETY: the storage is held (owned under its busy flag, or locked) while `self`
        // lives, and a mutable reference is only handed out from `&mut self`.
        unsafe { &*self.storage.data.get() }
    }

    /// The data, mutably; an error for a read guard.
    pub fn data_mut(&mut self) -> Result<&mut StorageData> {
        if self.access != Access::Write {
            return Err(Error::runtime(
                "internal error: tried to write through a read-only storage lock",
            ));
        }
        // SAFETY: the storage is held exclusively while `self` lives; `&mut self` keeps every
        // other reference from this guard dead while this one lives.
        Ok(unsafe { &mut *self.storage.data.get() })
    }
}

/// Whether `storage` is still owned by the thread that created it, i.e. accessed without its
/// lock (for tests of the protocol).
pub fn is_owned(storage: &Storage) -> bool {
    storage.inner().access.is_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(bytes: &[u8]) -> Storage {
        Storage::from_host_bytes(bytes).unwrap()
    }

    #[test]
    fn a_storage_is_owned_until_another_thread_touches_its_data() {
        let s = storage(&[1, 2]);
        assert!(is_owned(&s));
        s.write()
            .unwrap()
            .data_mut()
            .unwrap()
            .host_bytes_mut()
            .unwrap()[0] = 5;
        assert!(is_owned(&s));
        let read = std::thread::scope(|sc| {
            sc.spawn(|| s.read().unwrap().data().host_bytes().unwrap().to_vec())
                .join()
                .unwrap()
        });
        assert_eq!(read, vec![5, 2]);
        assert!(!is_owned(&s));
        // The former owner now locks like everyone else.
        assert_eq!(s.read().unwrap().data().host_bytes().unwrap(), &[5, 2]);
    }

    #[test]
    fn requests_on_one_storage_share_its_strongest_access() {
        let s = storage(&[0; 8]);
        let t = storage(&[7; 8]);
        let mut locks =
            StorageLocks::lock(&[(&s, Access::Read), (&t, Access::Read), (&s, Access::Write)])
                .unwrap();
        assert!(locks.same_storage(0, 2));
        assert!(!locks.same_storage(0, 1));
        locks.data_mut(0).unwrap().host_bytes_mut().unwrap()[0] = 9;
        assert_eq!(locks.data(2).unwrap().host_bytes().unwrap()[0], 9);
        assert!(locks.data_mut(1).is_err());
    }

    #[test]
    fn nested_access_is_refused_not_deadlocked() {
        let s = storage(&[1]);
        let _g = s.write().unwrap();
        let e = s.read().map(|_| ()).unwrap_err();
        assert!(e.message().contains("would deadlock"));
        // Refused on another storage too: the rule is per thread.
        let e = storage(&[2]).read().map(|_| ()).unwrap_err();
        assert!(e.message().contains("would deadlock"));
    }

    /// The owner holds its storage (without a lock) while two other threads ask for it: they
    /// must wait until the owner is done, then take turns under the lock. Each writer stamps
    /// its mark, pauses, and checks the mark is still there; a second writer getting in
    /// meanwhile overwrites it. (Fails at once if revokers stop waiting for the busy flag.)
    #[test]
    fn owner_and_revokers_never_write_at_once() {
        fn stamp_and_check(s: &Storage, mark: u8) {
            let mut g = s.write().unwrap();
            g.data_mut().unwrap().host_bytes_mut().unwrap()[0] = mark;
            std::thread::sleep(std::time::Duration::from_millis(2));
            assert_eq!(
                g.data().host_bytes().unwrap()[0],
                mark,
                "two writers at once"
            );
        }
        for _ in 0..5 {
            let s = storage(&[0; 8]);
            let start = std::sync::Barrier::new(3);
            std::thread::scope(|sc| {
                for mark in [2, 3] {
                    let (s, start) = (&s, &start);
                    sc.spawn(move || {
                        start.wait();
                        stamp_and_check(s, mark);
                    });
                }
                let mut g = s.write().unwrap();
                assert!(is_owned(&s));
                g.data_mut().unwrap().host_bytes_mut().unwrap()[0] = 1;
                start.wait();
                std::thread::sleep(std::time::Duration::from_millis(5));
                assert_eq!(g.data().host_bytes().unwrap()[0], 1, "a revoker got in");
                drop(g);
                stamp_and_check(&s, 1);
            });
            assert!(!is_owned(&s));
        }
    }

    /// Threads taking the same three storages, each listing them in a different order, all
    /// finish: owned storages are only waited on by threads holding nothing, and locks are
    /// taken in address order whatever the request order.
    #[test]
    fn opposite_request_orders_do_not_deadlock() {
        let st: Vec<Storage> = (0..3).map(|_| storage(&[0; 8])).collect();
        let orders = [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]];
        let (done, finished) = std::sync::mpsc::channel();
        for order in orders {
            let (st, done) = (st.clone(), done.clone());
            std::thread::spawn(move || {
                for _ in 0..2000 {
                    let req: Vec<(&Storage, Access)> =
                        order.iter().map(|&i| (&st[i], Access::Write)).collect();
                    let mut locks = StorageLocks::lock(&req).unwrap();
                    for k in 0..3 {
                        let bytes = locks.data_mut(k).unwrap().host_bytes_mut().unwrap();
                        bytes[0] = bytes[0].wrapping_add(1);
                    }
                }
                done.send(()).unwrap();
            });
        }
        for _ in orders {
            // A deadlock fails here instead of hanging the test run.
            let timeout = std::time::Duration::from_secs(60);
            finished.recv_timeout(timeout).expect("threads deadlocked");
        }
        for s in &st {
            // 4 threads x 2000 increments, modulo 256.
            assert_eq!(
                s.read().unwrap().data().host_bytes().unwrap()[0],
                (8000 % 256) as u8
            );
        }
    }

    /// Each thread owns one storage and keeps writing it while reading the others' (which
    /// revokes them): mixed owned and locked storages in one call, in every order.
    #[test]
    fn owned_and_shared_storages_mix_in_one_call() {
        let st: Vec<Storage> = (0..3).map(|_| storage(&[0; 8])).collect();
        std::thread::scope(|sc| {
            for me in 0..3 {
                let st = &st;
                sc.spawn(move || {
                    let mine = storage(&[0; 8]);
                    for k in 0..500u32 {
                        let other = &st[(me + 1 + k as usize) % 3];
                        let mut locks = StorageLocks::lock(&[
                            (other, Access::Read),
                            (&mine, Access::Write),
                            (&st[me], Access::Write),
                        ])
                        .unwrap();
                        let seen = locks.data(0).unwrap().host_bytes().unwrap()[0];
                        let bytes = locks.data_mut(1).unwrap().host_bytes_mut().unwrap();
                        bytes[0] = seen;
                        let shared = locks.data_mut(2).unwrap().host_bytes_mut().unwrap();
                        shared[1] = shared[1].wrapping_add(1);
                    }
                    assert!(is_owned(&mine));
                });
            }
        });
        for s in &st {
            assert_eq!(
                s.read().unwrap().data().host_bytes().unwrap()[1],
                (500 % 256) as u8
            );
        }
    }
}
