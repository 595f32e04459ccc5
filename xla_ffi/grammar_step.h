// GrammarStep: one fused decoding step for a batch of matchers, shared by the XLA FFI handlers
// (cpu_handler.cc, cuda_handler.cc) and the io_callback path (the Python bindings).
//
// Row i has handles[i], a HandleRegistry handle or -1 for a row without a grammar, and tokens[i],
// the token sampled for it at the previous step or -1 ("do not advance": the first step after
// prefill, rows that have finished). The step
//   1. validates the whole batch before touching anything: every handle known, no handle in two
//      rows, token ids in [-1, vocab_size), the mask row wide enough for the row's vocabulary;
//   2. locks the rows' slots in ascending handle order (concurrent shards cannot deadlock);
//   3. advances each row by its token. In strict mode a rejected token is an error: the rows already
//      advanced are rolled back, so an error leaves every matcher exactly as it was. Otherwise the
//      row is left unchanged and reported with kRejected;
//   4. writes each row's packed bitmask on the thread pool (rows without a grammar: all ones; a
//      terminated matcher: its stop tokens only);
//   5. writes each row's status bits (StepStatus).
// Returns "" on success, else a message that names the row and the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xg {

enum StepStatus : int32_t {
  kStepAdvanced = 1,       // the row's token was accepted this step
  kStepRejected = 2,       // the row's token was rejected (non-strict mode); the matcher is unchanged
  kStepTerminated = 4,     // the matcher has accepted a stop token
  kStepCompleted = 8,      // the output so far is a complete sentence (a stop token is allowed now)
  kStepUnconstrained = 16,  // the row has no grammar (handle -1)
  // TagDispatch mode of tool-calling grammars (matcher/tag_tracker.h): after this step the row is inside a tag;
  // it entered one / left one while reading this step's token (both when a token closes one and opens the next).
  kStepInTag = 1 << 8,
  kStepTagEntered = 1 << 9,
  kStepTagLeft = 1 << 10,
  // Bits 11..15 are reserved. Bits 16..30: the current tag's index + 1 (the tag just left on a step that leaves
  // one and enters none; 0 in free text), an index into the grammar's dispatch tags, saturating at 32767.
  kStepTagIndexShift = 16
};

enum class StepSource : int { kCpuFfi = 0, kCudaFfi = 1, kHostCallback = 2, kCount = 3 };

struct StepOptions {
  bool strict = true;   // a rejected token is an error (else: kStepRejected, row unchanged)
  int max_threads = 8;  // threads that fill the batch's masks (the caller's included)
};

std::string GrammarStep(const int32_t* handles, const int32_t* tokens, int64_t batch, uint32_t* bitmask,
                        int64_t words_per_row, int32_t* status, const StepOptions& options, StepSource source);

// How many GrammarStep calls each source has made in this process (tests count handler calls).
int64_t StepCallCount(StepSource source);

}  // namespace xg

// The same step behind a C ABI, for the CUDA handler module (a separate shared object that gets this
// function's address from the Python bindings, so both see one HandleRegistry). Returns 0 on success,
// else 1 with the message copied (truncated, NUL-terminated) into err[0, err_len).
extern "C" int xg2jax_grammar_step(const int32_t* handles, const int32_t* tokens, int64_t batch, uint32_t* bitmask,
                                   int64_t words_per_row, int32_t* status, int32_t strict, int32_t max_threads,
                                   int32_t source, char* err, size_t err_len);
