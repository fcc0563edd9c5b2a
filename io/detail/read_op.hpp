// io::detail::read_op: the state of one request while a backend works on it (shared by all backends).
#pragma once

#include "io/dma_buffer.hpp"
#include "io/file.hpp"
#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice::io::detail {

/// One read request and its progress. Owned by the initiating operation (a coroutine's handler op or a batch);
/// touched only on the reader's executor. A backend sees it through `attempt_*`: one kernel-level read
/// (pread or IORING_OP_READ) to perform, whose outcome it hands back to `reader::attempt_done`.
struct read_op {
    /// Called once when the request ends; may free the op.
    using complete_fn = void (*)(read_op& op, result<void>&& outcome);

    // The request, fixed at start.
    const file* f = nullptr;
    std::uint64_t offset = 0;
    std::span<std::byte> dest;

    // Where the bytes land: `dest` itself, or `bounce` holding an aligned superset of the request.
    dma_buffer bounce;
    std::byte* target = nullptr;
    std::uint64_t target_offset = 0; ///< file offset of target[0]
    std::size_t target_len = 0;      ///< bytes asked of the kernel (aligned for O_DIRECT files)
    std::size_t needed = 0;          ///< target[0, needed) must arrive for the request to succeed
    std::size_t done = 0;            ///< target[0, done) has arrived
    unsigned retries = 0;            ///< EINTR/EAGAIN resubmissions so far
    bool cancel_requested = false;
    bool finished = false;

    // The attempt a backend performs next.
    std::byte* attempt_buf = nullptr;
    std::size_t attempt_len = 0;
    std::uint64_t attempt_offset = 0;

    // Backend bookkeeping.
    read_op* next = nullptr;       ///< intrusive link for a backend's user-space queue
    bool queued = false;           ///< true while in that queue (not yet handed to the kernel/pool)
    void* backend_state = nullptr; ///< free for a backend (the faulty reader keeps its timer here)
    complete_fn on_complete = nullptr;
};

/// A FIFO of read_ops linked through `next`, for backends that must hold requests back (queue depth).
class read_op_queue {
public:
    [[nodiscard]] bool empty() const noexcept { return head_ == nullptr; }
    void push(read_op& op) noexcept {
        op.next = nullptr;
        op.queued = true;
        if (tail_ != nullptr) {
            tail_->next = &op;
        } else {
            head_ = &op;
        }
        tail_ = &op;
    }
    read_op& pop() noexcept {
        read_op& op = *head_;
        head_ = op.next;
        if (head_ == nullptr) {
            tail_ = nullptr;
        }
        op.next = nullptr;
        op.queued = false;
        return op;
    }
    /// Unlinks `op` if queued; returns whether it was.
    bool remove(read_op& op) noexcept {
        read_op* prev = nullptr;
        for (read_op* cur = head_; cur != nullptr; prev = cur, cur = cur->next) {
            if (cur != &op) {
                continue;
            }
            (prev != nullptr ? prev->next : head_) = cur->next;
            if (tail_ == cur) {
                tail_ = prev;
            }
            op.next = nullptr;
            op.queued = false;
            return true;
        }
        return false;
    }

private:
    read_op* head_ = nullptr;
    read_op* tail_ = nullptr;
};

} // namespace sluice::io::detail
