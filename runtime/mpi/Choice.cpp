#include "Choice.h"
#include "PricedSizes.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace collc::mpi {
namespace {

/// The start-ups, overheads and words of a schedule's steps whose largest
/// message is `largest` blocks, ts·t_s + to·t_o + tw·m·t_w: a model of
/// several segments prices each in the segment of that message (the
/// compiler's Line::coefficients).
struct CostPart {
  double largest, ts, to, tw;
};
const CostPart costParts[] = {
#define COLLC_COST_PARTS
#include "DropinCosts.inc"
#undef COLLC_COST_PARTS
};
/// A schedule's price on p ranks (collc cost), its parts in costParts:
/// on the port model, and where the receivers copy (`copies: receiver`,
/// shared memory).
struct Cost {
  const char *schedule;
  int p;
  int firstPart, numParts, firstReceiverPart, numReceiverParts;
};
// The build writes every schedule's price on the sizes it priced
// (PricedSizes.h; cost_table.py, from `collc cost --format json`) where the
// schedule is proved for them; a size in between is priced as the priced
// size below it, where the schedule is proved for it (Candidate::sizes).
// Prices decide only which proved schedule runs.
const int pricedSizes[] = {
#define COLLC_PRICED_SIZES
#include "DropinCosts.inc"
#undef COLLC_PRICED_SIZES
};
const Cost costs[] = {
#include "DropinCosts.inc"
};

struct Model {
  /// t_s and t_w (seconds, seconds a byte) from fromBytes up, ascending; a
  /// model's `segment:` opens the next (the compiler's CostModel::at).
  struct Segment {
    double fromBytes = 0, ts = 0, tw = 0;
  };
  std::vector<Segment> segments{{0, 0, 0}};
  bool receiversCopy = false;
  double to = -1; // seconds; negative: t_s
  const Segment &at(double bytes) const {
    const Segment *s = &segments.front();
    for (const Segment &next : segments)
      if (bytes >= next.fromBytes)
        s = &next;
    return *s;
  }
};

/// "152.8ns" or "83.779ps/byte" in seconds.
double seconds(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit(end);
  if (unit.rfind("ps", 0) == 0)
    return v * 1e-12;
  if (unit.rfind("ns", 0) == 0)
    return v * 1e-9;
  if (unit.rfind("us", 0) == 0)
    return v * 1e-6;
  if (unit.rfind("ms", 0) == 0)
    return v * 1e-3;
  return v;
}

/// "8KiB" or "4096B" in bytes.
double bytes(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ')
    unit.erase(0, 1);
  return unit == "KiB"   ? v * 1024
         : unit == "MiB" ? v * 1024 * 1024
         : unit == "GiB" ? v * 1024 * 1024 * 1024
                         : v;
}

/// A model block's fields in order, "key: value" between the braces;
/// `segment:` opens a segment that the `ts` and `tw` after it belong to. None
/// when the line holds no block.
std::optional<Model> parseModel(const std::string &line) {
  const size_t open = line.find('{');
  const size_t close = line.find('}', open);
  if (open == std::string::npos || close == std::string::npos)
    return std::nullopt;
  auto trim = [](const std::string &t) {
    const size_t first = t.find_first_not_of(' ');
    if (first == std::string::npos)
      return std::string();
    return t.substr(first, t.find_last_not_of(' ') + 1 - first);
  };
  Model m;
  std::istringstream fields(line.substr(open + 1, close - open - 1));
  std::string field;
  while (std::getline(fields, field, ',')) {
    const size_t colon = field.find(':');
    if (colon == std::string::npos)
      continue;
    const std::string key = trim(field.substr(0, colon)),
                      value = trim(field.substr(colon + 1));
    if (key == "segment")
      m.segments.push_back({bytes(value), 0, 0});
    else if (key == "ts")
      m.segments.back().ts = seconds(value);
    else if (key == "tw")
      m.segments.back().tw = seconds(value);
    else if (key == "to")
      m.to = seconds(value);
    else if (key == "copies")
      m.receiversCopy = value == "receiver";
  }
  return m;
}

/// The model the build priced with (its model file's first block).
const char *const buildModel =
#include "BuildModel.inc"
    ;

/// COLLC_MPI_MODEL=FILE[:NAME]: a model block as `collc calibrate -o`
/// writes it (the first in the file without NAME); else the build's.
Model loadModel() {
  const Model built = parseModel(buildModel).value_or(Model());
  const char *spec = std::getenv("COLLC_MPI_MODEL");
  if (!spec || !*spec)
    return built;
  std::string file = spec, name;
  if (size_t colon = file.rfind(':'); colon != std::string::npos) {
    name = file.substr(colon + 1);
    file.resize(colon);
  }
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string keyword, id;
    words >> keyword >> id;
    if (keyword != "model" || (!name.empty() && id != name))
      continue;
    if (std::optional<Model> m = parseModel(line))
      return *m;
  }
  std::fprintf(stderr, "collc_mpi: COLLC_MPI_MODEL=%s: no model block%s%s; "
               "using the build's model\n", spec, name.empty() ? "" : " ",
               name.c_str());
  return built;
}

struct Settings {
  Model model = loadModel();
  bool off = false, report = false;
  const Candidate *pinned[static_cast<int>(Coll::Count)] = {};
  bool toMpi[static_cast<int>(Coll::Count)] = {};
  std::map<std::string, std::vector<const Cost *>> byName; // by p

  Settings() {
    const char *all = std::getenv("COLLC_MPI");
    off = all && (std::strcmp(all, "off") == 0 || std::strcmp(all, "0") == 0);
    const char *r = std::getenv("COLLC_MPI_REPORT");
    report = r && *r && std::strcmp(r, "0") != 0;
    for (int c = 0; c < static_cast<int>(Coll::Count); ++c) {
      std::string var = "COLLC_MPI_";
      for (const char *n = collName(static_cast<Coll>(c)); *n; ++n)
        var += static_cast<char>(std::toupper(static_cast<unsigned char>(*n)));
      const char *pin = std::getenv(var.c_str());
      if (!pin || !*pin)
        continue;
      if (std::strcmp(pin, "mpi") == 0) {
        toMpi[c] = true;
        continue;
      }
      for (int i = 0; i < candidateCount; ++i)
        if (candidates[i].coll == static_cast<Coll>(c) &&
            std::strcmp(candidates[i].name, pin) == 0)
          pinned[c] = &candidates[i];
      if (!pinned[c]) {
        // Every rank reads the same environment, so every rank stops.
        std::fprintf(stderr, "collc_mpi: %s=%s: no such schedule for %s\n",
                     var.c_str(), pin, collName(static_cast<Coll>(c)));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        PMPI_Abort(MPI_COMM_WORLD, MPI_ERR_ARG);
      }
    }
    for (const Cost &cost : costs) {
      std::vector<const Cost *> &row = byName[cost.schedule];
      if (row.size() <= static_cast<size_t>(cost.p))
        row.resize(static_cast<size_t>(cost.p) + 1, nullptr);
      row[static_cast<size_t>(cost.p)] = &cost;
    }
  }

  /// The price of `part` on p ranks, or null where it has no schedule
  /// proved for p ranks.
  const Cost *costOf(const char *part, const Sizes &sizes, int p) const {
    auto it = byName.find(part);
    if (it == byName.end())
      return nullptr;
    const std::vector<const Cost *> &row = it->second;
    if (static_cast<size_t>(p) < row.size() && row[static_cast<size_t>(p)])
      return row[static_cast<size_t>(p)];
    if (!sizes.admit(p))
      return nullptr;
    return priceFor(row, std::span<const int>(pricedSizes), p);
  }

  /// The candidate's price, or a negative value where a part has no
  /// schedule proved for p ranks.
  double price(const Candidate &c, int p, int64_t bytes) const {
    double total = 0;
    for (int i = 0; i < 2; ++i) {
      const char *part = c.parts[i];
      if (!part)
        continue;
      const Cost *found = costOf(part, c.sizes[i], p);
      if (!found)
        return -1;
      const Cost &cost = *found;
      const int first =
          model.receiversCopy ? cost.firstReceiverPart : cost.firstPart;
      const int count =
          model.receiversCopy ? cost.numReceiverParts : cost.numParts;
      const double m = static_cast<double>(bytes);
      for (const CostPart &part :
           std::span(costParts + first, static_cast<size_t>(count))) {
        const Model::Segment &seg = model.at(part.largest * m);
        total += part.ts * seg.ts +
                 part.to * (model.to < 0 ? seg.ts : model.to) +
                 part.tw * m * seg.tw;
      }
    }
    return total;
  }
};

Settings &settings() {
  static Settings s;
  return s;
}

} // namespace

namespace {

constexpr int collCount = static_cast<int>(Coll::Count);
constexpr int reasonCount = static_cast<int>(Reason::Count);

/// One collective's calls at one thread, by schedule and by reason, and
/// their time. Only its thread writes it, so a call adds without a lock or
/// a locked instruction; the report may read it at any time.
struct Tally {
  std::unique_ptr<std::atomic<uint64_t>[]> bySchedule {
    new std::atomic<uint64_t>[ static_cast<size_t>(candidateCount) ]()
  };
  std::atomic<uint64_t> byReason[reasonCount] = {};
  std::atomic<double> collcSeconds{0}, mpiSeconds{0};
};
using Tallies = std::array<Tally, collCount>;

/// Every thread counts in its own tallies (MPI_THREAD_MULTIPLE: two
/// threads may call collectives at once); those of a thread that ended
/// are folded into `ended` and its block kept for the next thread.
struct Registry {
  std::mutex lock;
  std::vector<Tallies *> live, spare;
  Tallies ended;
};
Registry &registry() {
  static Registry &r = *new Registry; // threads may end during exit
  return r;
}
thread_local Tallies *mine = nullptr; // constant-initialised: no TLS guard

void fold(Tallies &from, Tallies &into) {
  for (int c = 0; c < collCount; ++c) {
    Tally &f = from[c], &t = into[c];
    for (int i = 0; i < candidateCount; ++i)
      add(t.bySchedule[i], f.bySchedule[i].exchange(0));
    for (int i = 0; i < reasonCount; ++i)
      add(t.byReason[i], f.byReason[i].exchange(0));
    add(t.collcSeconds, f.collcSeconds.exchange(0));
    add(t.mpiSeconds, f.mpiSeconds.exchange(0));
  }
}

/// At the thread's end its counts join `ended`.
struct Leaver {
  ~Leaver() {
    Registry &r = registry();
    std::lock_guard<std::mutex> hold(r.lock);
    fold(*mine, r.ended);
    std::erase(r.live, mine);
    r.spare.push_back(mine);
    mine = nullptr;
  }
};

Tallies &enrol() {
  thread_local Leaver leaver; // constructed here, on the thread's first call
  (void)leaver;
  Registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  if (r.spare.empty()) {
    mine = new Tallies;
  } else {
    mine = r.spare.back();
    r.spare.pop_back();
  }
  r.live.push_back(mine);
  return *mine;
}

/// One collective's calls at this rank, all threads together.
struct Totals {
  std::vector<uint64_t> bySchedule;
  uint64_t byReason[reasonCount] = {};
  double collcSeconds = 0, mpiSeconds = 0;
};

std::vector<Totals> totals() {
  std::vector<Totals> all(collCount);
  for (Totals &t : all)
    t.bySchedule.resize(static_cast<size_t>(candidateCount));
  Registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  std::vector<Tallies *> blocks = r.live;
  blocks.push_back(&r.ended);
  for (Tallies *b : blocks)
    for (int c = 0; c < collCount; ++c) {
      const Tally &f = (*b)[c];
      Totals &t = all[static_cast<size_t>(c)];
      for (int i = 0; i < candidateCount; ++i)
        t.bySchedule[static_cast<size_t>(i)] +=
            f.bySchedule[i].load(std::memory_order_relaxed);
      for (int i = 0; i < reasonCount; ++i)
        t.byReason[i] += f.byReason[i].load(std::memory_order_relaxed);
      t.collcSeconds += f.collcSeconds.load(std::memory_order_relaxed);
      t.mpiSeconds += f.mpiSeconds.load(std::memory_order_relaxed);
    }
  return all;
}

} // namespace

const char *reasonText(Reason r) {
  switch (r) {
  case Reason::Invalid: return "an invalid argument (MPI reports it)";
  case Reason::Pinned: return "pinned to MPI by the environment";
  case Reason::Intercomm: return "an intercommunicator";
  case Reason::OneRank: return "one rank";
  case Reason::Empty: return "an empty message";
  case Reason::TooLarge: return "a block over 2 GiB";
  case Reason::RanksUnproved: return "no schedule proved for this many ranks";
  case Reason::NonCommutative:
    return "a non-commutative operator (no schedule proved to fold it in "
           "rank order for this collective and size)";
  case Reason::OpOnType: return "no typed fold for this operator and type";
  case Reason::UserOpLayout: return "a user operator on a type with holes";
  case Reason::MixedType: return "a reduction over several basic types";
  case Reason::UnequalCounts: return "irregular counts";
  case Reason::RootCounts:
    return "counts only the root knows (the other ranks cannot tell that "
           "they are equal)";
  case Reason::NoSchedule: return "no library schedule for this collective";
  case Reason::Nonblocking:
    return "nonblocking (MPI's own progresses it while the program works)";
  case Reason::Count: break;
  }
  return "?";
}

Choice chooseAnew(Coll coll, int ranks, int64_t bytes, bool ordered);

bool pinnedToMpi(Coll coll) {
  const Settings &s = settings();
  return s.off || s.toMpi[static_cast<int>(coll)];
}

Choice choose(Coll coll, int ranks, int64_t bytes, bool ordered) {
  // A program repeats its calls: the last few choices per collective are
  // kept.
  struct Last {
    int ranks = 0;
    int64_t bytes = -1;
    bool ordered = false;
    Choice choice;
  };
  constexpr int ways = 4;
  thread_local Last last[scheduledColls][ways];
  thread_local unsigned next[scheduledColls] = {};
  Last *kept = last[static_cast<int>(coll)];
  for (int i = 0; i < ways; ++i)
    if (kept[i].ranks == ranks && kept[i].bytes == bytes &&
        kept[i].ordered == ordered)
      return kept[i].choice;
  unsigned &n = next[static_cast<int>(coll)];
  Last &l = kept[n];
  n = (n + 1) % ways;
  l = {ranks, bytes, ordered, chooseAnew(coll, ranks, bytes, ordered)};
  return l.choice;
}

Choice chooseAnew(Coll coll, int ranks, int64_t bytes, bool ordered) {
  const Settings &s = settings();
  Choice best;
  best.reason = ordered ? Reason::NonCommutative : Reason::NoSchedule;
  if (const Candidate *pin = s.pinned[static_cast<int>(coll)]) {
    if (ordered && !pin->keepsOrder)
      best.reason = Reason::NonCommutative;
    else if (s.price(*pin, ranks, bytes) >= 0)
      best.candidate = pin;
    else
      best.reason = Reason::RanksUnproved;
    return best;
  }
  double cheapest = 0;
  bool any = false;
  for (int i = 0; i < candidateCount; ++i) {
    const Candidate &c = candidates[i];
    // An ordered candidate is one of the others proved again for
    // operators that do not commute: it competes only for those.
    if (c.coll != coll || c.keepsOrder != ordered)
      continue;
    any = true;
    double price = s.price(c, ranks, bytes);
    if (price >= 0 && (!best.candidate || price < cheapest)) {
      best.candidate = &c;
      cheapest = price;
    }
  }
  if (!best.candidate && any)
    best.reason = Reason::RanksUnproved;
  return best;
}

bool reporting() { return settings().report; }

namespace {
/// This thread's tally of `coll`.
Tally &tallyOf(Coll coll) {
  return (mine ? *mine : enrol())[static_cast<size_t>(coll)];
}
} // namespace

std::atomic<uint64_t> &callsOf(Coll coll, const Candidate &candidate) {
  return tallyOf(coll).bySchedule[&candidate - candidates];
}

void count(Coll coll, const Choice &choice, double seconds) {
  Tally &t = tallyOf(coll);
  if (choice.candidate) {
    add(callsOf(coll, *choice.candidate), uint64_t{1});
    if (seconds)
      add(t.collcSeconds, seconds);
  } else {
    add(t.byReason[static_cast<int>(choice.reason)], uint64_t{1});
    if (seconds)
      add(t.mpiSeconds, seconds);
  }
}

} // namespace collc::mpi

/// Calls run by collc's schedules and handed to MPI so far at this rank
/// (for tests and tools; the report prints them by collective).
extern "C" void collc_mpi_counts(unsigned long long *collc,
                                 unsigned long long *mpi) {
  unsigned long long ours = 0, theirs = 0;
  for (const collc::mpi::Totals &t : collc::mpi::totals()) {
    for (uint64_t c : t.bySchedule)
      ours += c;
    for (uint64_t c : t.byReason)
      theirs += c;
  }
  *collc = ours;
  *mpi = theirs;
}

namespace collc::mpi {

void printReport() {
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = static_cast<int>(Coll::Count);
  const int reasons = static_cast<int>(Reason::Count);
  // Calls summed over ranks, times the slowest rank's.
  std::vector<unsigned long long> calls, callsSum;
  std::vector<double> times, timesMax;
  for (const Totals &t : totals()) {
    for (uint64_t c : t.bySchedule)
      calls.push_back(c);
    for (uint64_t c : t.byReason)
      calls.push_back(c);
    times.push_back(t.collcSeconds);
    times.push_back(t.mpiSeconds);
  }
  callsSum.resize(calls.size());
  timesMax.resize(times.size());
  PMPI_Reduce(calls.data(), callsSum.data(), static_cast<int>(calls.size()),
              MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  PMPI_Reduce(times.data(), timesMax.data(), static_cast<int>(times.size()),
              MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank != 0)
    return;
  std::fprintf(stderr, "collc_mpi report: %d ranks; calls summed over ranks, "
               "time of the slowest rank\n", size);
  const size_t schedules = static_cast<size_t>(candidateCount);
  const size_t stride = schedules + static_cast<size_t>(reasons);
  for (int c = 0; c < n; ++c) {
    const unsigned long long *row = callsSum.data() + stride * c;
    unsigned long long ours = 0, theirs = 0;
    for (size_t i = 0; i < schedules; ++i)
      ours += row[i];
    for (int i = 0; i < reasons; ++i)
      theirs += row[schedules + static_cast<size_t>(i)];
    if (!ours && !theirs)
      continue;
    std::fprintf(stderr,
                 "  %-15s collc %llu calls (%.3f s), MPI %llu calls (%.3f s)\n",
                 collName(static_cast<Coll>(c)), ours, timesMax[2 * c],
                 theirs, timesMax[2 * c + 1]);
    for (size_t i = 0; i < schedules; ++i)
      if (row[i])
        std::fprintf(stderr, "    %8llu  %s\n", row[i], candidates[i].name);
    for (int i = 0; i < reasons; ++i)
      if (row[schedules + static_cast<size_t>(i)])
        std::fprintf(stderr, "    %8llu  MPI: %s\n",
                     row[schedules + static_cast<size_t>(i)],
                     reasonText(static_cast<Reason>(i)));
  }
}

namespace {
bool reportArmed = false; // set at MPI_Init, read at MPI_Finalize: one thread

int reportAtSelfFree(MPI_Comm, int keyval, void *, void *) {
  printReport();
  MPI_Comm_free_keyval(&keyval);
  return MPI_SUCCESS;
}
} // namespace

void armReport() {
  int keyval = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, reportAtSelfFree, &keyval,
                             nullptr) == MPI_SUCCESS &&
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr) == MPI_SUCCESS)
    reportArmed = true;
}

void reportBeforeFinalize() {
  if (!reportArmed)
    printReport();
}

int localFailure(MPI_Comm comm, int code, const char *what) {
  std::fprintf(stderr, "collc_mpi: %s\n", what);
  // As Engine::failLocal: the message is forwarded before the abort.
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  PMPI_Comm_call_errhandler(comm, code);
  // MPI_ERRORS_RETURN: the others may be waiting for this rank's messages.
  PMPI_Abort(comm, code);
  return code;
}

} // namespace collc::mpi
