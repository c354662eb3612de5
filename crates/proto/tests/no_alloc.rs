//! Decoding allocates nothing, and encoding into a reused buffer allocates nothing once the
//! buffer has grown: counted with a counting global allocator.

#[path = "common/samples.rs"]
mod samples;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use larch_proto::{encode_search_result_entry, frame, LdapMessage};

struct Counting;

thread_local! {
    /// Allocations made by this thread; the harness runs tests on several threads, and
    /// only the measuring thread's own allocations count.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// The workspace denies unsafe code; `GlobalAlloc` is an unsafe trait, so this test binary
// allows it here, for an allocator that only counts and forwards to the system one.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn count<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = ALLOCATIONS.with(Cell::get);
    let r = f();
    (ALLOCATIONS.with(Cell::get) - before, r)
}

#[test]
fn decoding_and_walking_a_search_request_allocates_nothing() {
    let pdu = samples::search_request();
    let (n, walked) = count(|| {
        let mut total = 0;
        for _ in 0..1000 {
            let frame::Frame::Complete(len) =
                frame::frame(&pdu, larch_proto::limits::DEFAULT_MAX_PDU_BYTES).unwrap()
            else {
                unreachable!()
            };
            let msg = LdapMessage::decode(&pdu[..len]).unwrap();
            total += samples::walk(&msg);
        }
        total
    });
    assert!(walked > 0);
    assert_eq!(n, 0, "decoding a SearchRequest 1000 times allocated {n} times");
}

#[test]
fn decoding_and_walking_an_entry_allocates_nothing() {
    let pdu = samples::search_result_entry();
    let (n, walked) = count(|| {
        (0..1000)
            .map(|_| samples::walk(&LdapMessage::decode(&pdu).unwrap()))
            .sum::<usize>()
    });
    assert!(walked > 0);
    assert_eq!(n, 0, "decoding an entry 1000 times allocated {n} times");
}

#[test]
fn encoding_into_a_reused_buffer_allocates_nothing_in_the_steady_state() {
    let entry = samples::search_result_entry();
    let stored = samples::stored_attributes(&entry);
    let request = samples::search_request();
    let mut out = Vec::with_capacity(64 * 1024);
    let (n, _) = count(|| {
        for i in 0..1000 {
            out.clear();
            // The hot path: an entry from its stored BER form.
            encode_search_result_entry(&mut out, i, samples::ENTRY_DN, &stored);
            // The generic path: re-encode decoded messages (lengths back-patched in place).
            LdapMessage::decode(&entry).unwrap().encode(&mut out);
            LdapMessage::decode(&request).unwrap().encode(&mut out);
        }
    });
    assert_eq!(n, 0, "encoding allocated {n} times");
    assert!(out.len() > 1500);
}
