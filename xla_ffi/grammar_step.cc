// GrammarStep: validate everything, lock in handle order, advance (undo on a strict rejection), fill
// on the pool, report. See grammar_step.h for the contract.
#include "grammar_step.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "handle_registry.h"
#include "support/thread_pool.h"

namespace xg {

static_assert(TagTracker::kInTag == kStepInTag && TagTracker::kEntered == kStepTagEntered &&
                  TagTracker::kLeft == kStepTagLeft && TagTracker::kTagShift == kStepTagIndexShift,
              "the tag tracker writes StepStatus bits");

namespace {

std::array<std::atomic<int64_t>, static_cast<int>(StepSource::kCount)> g_calls{};

// A short printable form of a token's bytes for error messages.
std::string TokenRepr(const TokenizerInfo& tok, int32_t id) {
  if (id >= tok.NumTokens()) return "padding id";
  if (tok.IsSpecial(id)) return "special token";
  std::string out = "'";
  for (unsigned char c : tok.Token(id).substr(0, 24)) {
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out + "'";
}

// Builds an error message from its parts (only on the error path: no stream on the fast path).
template <typename... T>
std::string Msg(const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

struct Row {
  int64_t index;
  int32_t handle;
  std::shared_ptr<HandleRegistry::Slot> slot;
};

}  // namespace

int64_t StepCallCount(StepSource source) { return g_calls[static_cast<int>(source)].load(); }

std::string GrammarStep(const int32_t* handles, const int32_t* tokens, int64_t batch, uint32_t* bitmask,
                        int64_t words_per_row, int32_t* status, const StepOptions& options, StepSource source) {
  g_calls[static_cast<int>(source)].fetch_add(1);
  // 1. Validate the whole batch.
  std::vector<Row> rows;
  rows.reserve(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const int32_t h = handles[i], t = tokens[i];
    if (t < -1) {
      return Msg("row ", i, ": token id ", t, " is negative (use -1 for \"do not advance\")");
    }
    if (h == -1) continue;
    if (h < 0) {
      return Msg("row ", i, ": grammar handle ", h, " is invalid (use -1 for a row without a grammar)");
    }
    auto slot = HandleRegistry::Global().Find(h);
    if (!slot) {
      return Msg("row ", i, ": grammar handle ", h, " is unknown or already freed");
    }
    if (!rows.empty() && slot->owner != rows.front().slot->owner) {
      return Msg("row ", i, ": grammar handle ", h, " belongs to a different GrammarState than row ",
                 rows.front().index, "'s (handle ", rows.front().handle,
                 "); a step serves the handles of one GrammarState (create one state for the whole batch)");
    }
    const TokenizerInfo& tok = slot->matcher.grammar().tokenizer();
    if (t >= tok.VocabSize()) {
      return Msg("row ", i, ": token id ", t, " is out of range [0, ", tok.VocabSize(), ")");
    }
    if (words_per_row < tok.MaskWords()) {
      return Msg("row ", i, ": the bitmask row has ", words_per_row, " int32 words, but vocab_size ",
                 tok.VocabSize(), " needs ", tok.MaskWords());
    }
    rows.push_back({i, h, std::move(slot)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.handle < b.handle; });
  for (size_t k = 1; k < rows.size(); ++k) {
    if (rows[k].handle == rows[k - 1].handle) {
      return Msg("grammar handle ", rows[k].handle, " is used by rows ", std::min(rows[k - 1].index, rows[k].index),
                 " and ", std::max(rows[k - 1].index, rows[k].index), " (one matcher per row)");
    }
  }
  // 2. Lock in ascending handle order.
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(rows.size());
  for (const Row& r : rows) locks.emplace_back(r.slot->mu);

  // 3. Advance. `advanced` remembers how to undo each row that moved.
  struct Undo {
    GrammarMatcher* m;
    std::optional<GrammarMatcher> backup;  // for matchers that cannot roll back one token
  };
  std::vector<Undo> advanced;
  std::vector<int32_t> row_status(batch, 0);
  auto undo_all = [&] {
    for (Undo& u : advanced) {
      if (u.backup) {
        *u.m = std::move(*u.backup);
      } else {
        u.m->UndoLastToken();
      }
    }
  };
  for (const Row& r : rows) {
    const int32_t t = tokens[r.index];
    if (t == -1) continue;
    GrammarMatcher& m = r.slot->matcher;
    std::optional<GrammarMatcher> backup;
    if (m.MaxRollbackTokens() == 0) backup = m.Fork();
    bool ok = false;
    try {
      ok = m.AcceptToken(t);
    } catch (const std::exception& e) {
      undo_all();
      return Msg("row ", r.index, ": ", e.what());
    }
    if (ok) {
      advanced.push_back({&m, std::move(backup)});
      row_status[r.index] |= kStepAdvanced;
    } else if (options.strict) {
      undo_all();
      return Msg("row ", r.index, " (grammar handle ", r.handle, "): token ", t, " (",
                 TokenRepr(m.grammar().tokenizer(), t), ") is rejected by the grammar",
                 m.IsTerminated() ? " (the matcher has already terminated)" : "",
                 "; every matcher of the batch is unchanged");
    } else {
      row_status[r.index] |= kStepRejected;
    }
  }
  // 4. Fill: rows without a grammar allow everything.
  for (int64_t i = 0; i < batch; ++i) {
    if (handles[i] == -1) {
      std::memset(bitmask + i * words_per_row, 0xff, sizeof(uint32_t) * words_per_row);
      row_status[i] = kStepUnconstrained;
    }
  }
  // Filling from built entries takes ~1 µs a row, less than waking pool threads; a first visit that
  // builds an entry takes milliseconds. Use the pool only when some row will build.
  int threads = 1;
  for (const Row& r : rows) {
    if (r.slot->matcher.NextFillBuildsEntries()) {
      threads = std::max(1, options.max_threads);
      break;
    }
  }
  try {
    ThreadPool::Global().ParallelFor(rows.size(), threads, [&](size_t k) {
      rows[k].slot->matcher.FillNextTokenBitmask(bitmask + rows[k].index * words_per_row,
                                                 static_cast<int32_t>(words_per_row));
    });
  } catch (const std::exception& e) {
    undo_all();
    return Msg("filling the token bitmask failed: ", e.what(), "; every matcher of the batch is unchanged");
  }
  // 5. Status.
  for (const Row& r : rows) {
    const GrammarMatcher& m = r.slot->matcher;
    if (m.IsTerminated()) row_status[r.index] |= kStepTerminated;
    if (m.IsCompleted()) row_status[r.index] |= kStepCompleted;
    row_status[r.index] |= m.TagStatusBits(/*with_last_step_switches=*/(row_status[r.index] & kStepAdvanced) != 0);
  }
  std::copy(row_status.begin(), row_status.end(), status);
  return "";
}

}  // namespace xg

extern "C" int xg2jax_grammar_step(const int32_t* handles, const int32_t* tokens, int64_t batch, uint32_t* bitmask,
                                   int64_t words_per_row, int32_t* status, int32_t strict, int32_t max_threads,
                                   int32_t source, char* err, size_t err_len) {
  std::string msg;
  try {
    msg = xg::GrammarStep(handles, tokens, batch, bitmask, words_per_row, status,
                          xg::StepOptions{strict != 0, max_threads}, static_cast<xg::StepSource>(source));
  } catch (const std::exception& e) {
    msg = std::string("internal error in the grammar step: ") + e.what();
  }
  if (msg.empty()) return 0;
  if (err_len > 0) {
    const size_t n = std::min(msg.size(), err_len - 1);
    std::memcpy(err, msg.data(), n);
    err[n] = '\0';
  }
  return 1;
}
