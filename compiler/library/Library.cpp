#include "library/Library.h"
#include "library/Algorithms.h"
#include "library/Compose.h"
#include "library/SpanningTree.h"
#include "library/Specialise.h"

#include "cost/Cost.h"
#include "ir/Instantiate.h"
#include "sema/Sema.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

using namespace collc;
using namespace collc::library;
using ir::CollectiveKind;
using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;

std::vector<const ir::Schedule *> Library::schedules() const {
  std::vector<const ir::Schedule *> out;
  for (const Program &file : files)
    for (const ir::Schedule &s : file.schedules)
      out.push_back(&s);
  return out;
}

const ir::Schedule *Library::find(llvm::StringRef name) const {
  for (const Program &file : files)
    if (const ir::Schedule *s = file.findSchedule(name))
      return s;
  return nullptr;
}

std::string library::dataDirectory(const char *argv0) {
  // An installed collc: PREFIX/bin/collc and PREFIX/share/collc.
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&library::dataDirectory));
  if (!exe.empty()) {
    llvm::SmallString<256> dir(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
    llvm::sys::path::append(dir, "share", "collc");
    if (llvm::sys::fs::is_directory(dir + "/specs/library"))
      return std::string(dir);
  }
  return COLLC_SOURCE_DIR;
}

std::string library::defaultDirectory(const char *argv0) {
  if (const char *env = std::getenv("COLLC_LIBRARY"))
    return env;
  llvm::SmallString<256> dir(dataDirectory(argv0));
  llvm::sys::path::append(dir, "specs", "library");
  return std::string(dir);
}

llvm::Expected<Library> library::load(llvm::StringRef directory,
                                      DiagnosticEngine &diags) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".coll")
      paths.push_back(it->path());
  if (ec || paths.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "cannot read the algorithm library in '%s'%s%s (set COLLC_LIBRARY "
        "to its directory)",
        directory.str().c_str(), ec ? ": " : "",
        ec ? ec.message().c_str() : ": no .coll files");
  llvm::sort(paths);
  Library library;
  for (const std::string &path : paths) {
    unsigned errorsBefore = diags.errorCount();
    llvm::Expected<Program> file = loadProgram(path, diags);
    if (!file)
      return file.takeError();
    if (diags.errorCount() != errorsBefore)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the algorithm library file '%s' has "
                                     "errors",
                                     path.c_str());
    library.files.push_back(std::move(*file));
  }
  for (Program &file : library.files)
    if (!composeAll(
            file, [&](llvm::StringRef name) { return library.find(name); },
            diags))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the algorithm library's compositions "
                                     "have errors");
  return library;
}

const CostModel &library::defaultModel() {
  static const CostModel model = [] {
    CostModel m;
    m.name = "default";
    m.ts = 1e-6;
    m.twPerByte = 0.25e-9;
    return m;
  }();
  return model;
}

using library::detail::first;
using library::detail::specialise;

namespace {

/// Why a schedule does not fit, for the error's notes.
struct Rejection {
  std::string schedule;
  std::string reason;
};

/// "p = 2..4096", "a = 1..64, b = 2..64": a family's declared ranges.
std::string declaredRanges(const ir::Schedule &family) {
  std::string out;
  for (const ir::Parameter &p : family.params) {
    if (!p.range)
      return "";
    out += (out.empty() ? "" : ", ") + p.name + " = " +
           std::to_string(p.range->first) + ".." +
           std::to_string(p.range->second);
  }
  return out;
}

/// The library's proof that covers choice `c` of `family` (a schedule of a
/// library file judged under `familyPorts`) under `ports`, as a phrase;
/// empty when none does. The library's families are proved for their
/// declared ranges (tests/lit/full/library); a member in range whose fit
/// keeps what holds (Choice::keepsProof) holds too, under the port model
/// the family was proved for, or a single-port family under all-port (one
/// message per rank and step shares no channel at either end).
/// Either the proof, or why there is none (for the rejection).
struct LibraryProof {
  std::string proof, whyNot;
};
LibraryProof libraryProof(const Choice &c, const ir::Schedule &family,
                          PortModel familyPorts, PortModel ports) {
  if (!c.keepsProof)
    return {"", "its fit to the topology is not one its proof covers"};
  if (familyPorts == PortModel::All && ports != familyPorts)
    return {"", "the library proves it all-port only"};
  std::string ranges = declaredRanges(family);
  for (size_t i = 0; i < family.params.size(); ++i) {
    const auto &range = family.params[i].range;
    int64_t v = c.schedule.params[i].range->first;
    if (!range || v < range->first || v > range->second)
      return {"", "the library proves it for " +
                      (ranges.empty() ? "no range" : ranges) + " only"};
  }
  return {"the library's proof of '" + family.name + "'" +
              (ranges.empty() ? "" : " for " + ranges),
          ""};
}

/// Costs a choice under the model's port model; nullopt when it does not
/// simulate correctly there. `proof` (libraryProof) lets a member too large
/// to simulate be priced from its rules.
std::optional<cost::ScheduleCost> price(const Choice &c, const CostModel &model,
                                        const LibraryProof &proof,
                                        std::string &why) {
  std::vector<int64_t> params;
  for (const ir::Parameter &p : c.schedule.params)
    params.push_back(p.range->first);
  const std::string &provedBy = proof.proof;
  if (provedBy.empty()) {
    llvm::Expected<std::optional<std::string>> tooLarge =
        cost::tooLargeToSimulate(c.schedule, params);
    if (!tooLarge) {
      why = llvm::toString(tooLarge.takeError());
      return std::nullopt;
    }
    if (*tooLarge) {
      why = **tooLarge + (proof.whyNot.empty() ? "" : ", and " + proof.whyNot);
      return std::nullopt;
    }
  }
  cost::CostOptions options;
  options.ports = model.ports;
  options.stopAtViolation = true;
  options.provedBy = provedBy;
  llvm::Expected<cost::ScheduleCost> priced =
      cost::costOf(c.schedule, params, options);
  if (!priced) {
    why = llvm::toString(priced.takeError());
    return std::nullopt;
  }
  if (!priced->valid) {
    why =
        "it does not simulate correctly there (" + priced->invalidBecause + ")";
    return std::nullopt;
  }
  return std::move(*priced);
}

std::string rejections(llvm::ArrayRef<Rejection> rejected) {
  std::string out;
  for (const Rejection &r : rejected)
    out += "\n  " + r.schedule + ": " + r.reason;
  return out;
}

/// The fits so far, each with its price, and why the others do not fit.
struct Fits {
  std::vector<std::pair<Choice, cost::ScheduleCost>> priced;
  std::vector<Rejection> rejected;
};

/// `using s` with s a schedule of the file: that one, for `what`.
llvm::Expected<std::vector<Choice>> ownSchedule(const ir::Schedule &own,
                                                const CollectiveDef &def,
                                                const CostModel &model,
                                                const std::string &what) {
  llvm::Expected<Choice> c = first(specialise(own, def));
  std::string why;
  // A renaming that is no symmetry (see relabellingTo) must still run.
  if (c && !c->relabelling.empty() &&
      !price(*c, model, {"", "it is not the library's"}, why))
    c = llvm::createStringError(llvm::inconvertibleErrorCode(), "with %s %s",
                                c->relabelling.c_str(), why.c_str());
  if (c)
    c->fromLibrary = false;
  if (!c)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "schedule '%s' cannot run %s: %s",
        own.name.c_str(), what.c_str(), llvm::toString(c.takeError()).c_str());
  return std::vector<Choice>{std::move(*c)};
}

/// The library's members that fit `def` (of its family, unless automatic).
void libraryFits(const CollectiveDef &def, const Library &lib,
                 const CostModel &model, bool automatic, Fits &out) {
  auto &fits = out.priced;
  auto &rejected = out.rejected;
  for (const Program &libraryFile : lib.files)
    for (const ir::Schedule &family : libraryFile.schedules) {
      const ir::Schedule *s = &family;
      if (s->collective.kind != def.collective.kind)
        continue;
      if (!automatic && s->algorithm != def.algorithm)
        continue;
      llvm::Expected<std::vector<Choice>> members = specialise(*s, def);
      if (!members) {
        rejected.push_back({s->name, llvm::toString(members.takeError())});
        continue;
      }
      std::string why;
      size_t before = fits.size();
      for (Choice &c : *members) {
        std::optional<cost::ScheduleCost> priced = price(
            c, model, libraryProof(c, *s, libraryFile.ports(), model.ports),
            why);
        if (!priced)
          continue;
        c.startups = priced->startups;
        c.words = priced->words.str();
        c.reliesOn = priced->reliesOn;
        fits.emplace_back(std::move(c), std::move(*priced));
      }
      if (fits.size() == before)
        rejected.push_back({s->name, why});
    }
}

/// The schedules built for `def`'s topology (library/SpanningTree.h), where
/// they apply; the chain only where nothing else fits yet, or on a graph.
void builtFits(const CollectiveDef &def, const CostModel &model, bool automatic,
               Fits &out) {
  auto &fits = out.priced;
  auto &rejected = out.rejected;
  const bool noFitYet = fits.empty();
  // A schedule built for this topology: priced and proved here (a step whose
  // messages share a link does not simulate correctly, and price() refuses
  // it, saying where), or the reason it is not.
  auto addBuilt = [&](llvm::Expected<ir::Schedule> built,
                      llvm::StringRef source) {
    if (!built) {
      rejected.push_back({source.str(), llvm::toString(built.takeError())});
      return;
    }
    Choice c;
    c.schedule = std::move(*built);
    c.source = source.str();
    c.built = true;
    c.keepsProof = false;
    std::string why;
    std::optional<cost::ScheduleCost> priced =
        price(c, model, {"", "it is built for this topology"}, why);
    if (!priced) {
      rejected.push_back({c.source, why});
      return;
    }
    c.startups = priced->startups;
    c.words = priced->words.str();
    fits.emplace_back(std::move(c), std::move(*priced));
  };
  const bool graph = def.topology.kind() == TopologyKind::Graph;
  // Any connected graph has a spanning tree to fall back on.
  if (graph && (automatic || def.algorithm == spanningTreeAlgorithm))
    addBuilt(spanningTreeSchedule(def.name, def.collective, def.topology,
                                  def.loc),
             spanningTreeAlgorithm);
  // A scan runs along the ranks in order, over the topology's routes: on a
  // graph, and on any topology the library's scans do not run on (a mesh,
  // a torus, a tree).
  if ((graph || noFitYet) &&
      meaning::conditionsOf(def.collective.kind).scans() &&
      (automatic || def.algorithm == chainScanAlgorithm))
    addBuilt(chainScanSchedule(def.name, def.collective, def.topology,
                               def.loc),
             chainScanAlgorithm);
  // An all-to-all also goes straight to each destination, where no two
  // messages of a step share a link of the graph.
  // A permutation, on any topology, goes straight to each destination.
  const bool direct =
      (graph && def.collective.kind == CollectiveKind::Alltoall) ||
      def.collective.kind == CollectiveKind::Permute;
  if (direct && (automatic || def.algorithm == directExchangeAlgorithm))
    addBuilt(directExchangeSchedule(def.name, def.collective, def.topology,
                                    def.loc),
             directExchangeAlgorithm);
}

/// The fits' prices and which of two is the better buy at a size: what
/// choosing the cheapest fit for each size compares.
struct Pricing {
  const std::vector<std::pair<Choice, cost::ScheduleCost>> &fits;
  const CostModel &model;
  const std::vector<cost::ScheduleCost::Line> &lines;
  const std::vector<MessageCost> &segments;

  /// Fit `i`'s time for a message of `bytes`.
  double secondsOf(size_t i, double bytes) const {
    return lines[i].seconds(segments, bytes, model.to);
  }
  /// Whether fit `a` beats fit `b` at `bytes`: by time, then by words, then
  /// by renaming less.
  bool cheaper(size_t a, size_t b, double bytes) const {
    double ta = secondsOf(a, bytes), tb = secondsOf(b, bytes);
    if (ta != tb)
      return ta < tb;
    if (lines[a].words.toDouble() != lines[b].words.toDouble())
      return lines[a].words.toDouble() < lines[b].words.toDouble();
    return fits[a].first.relabelling.size() < fits[b].first.relabelling.size();
  }
};

/// The choices found so far, each from the size at which it becomes the
/// cheapest.
struct SizeRanges {
  std::vector<Choice> out;
  std::optional<size_t> last;

  /// Starts fit `choice` at `from` bytes, unless it is already the last.
  void add(const Pricing &pricing, size_t choice, int64_t from) {
    if (last == choice)
      return;
    last = choice;
    Choice c = pricing.fits[choice].first;
    c.fromBytes = from;
    out.push_back(std::move(c));
  }
};

/// The sizes, from 0, between which every fit's price is one line a + b·m
/// (only 0 unless automatic), ascending and each once.
std::vector<double> sizeChanges(const Pricing &pricing, bool automatic) {
  std::vector<double> changes{0};
  if (automatic)
    for (const cost::ScheduleCost::Line &line : pricing.lines)
      for (double at : line.segmentChanges(pricing.segments))
        changes.push_back(std::ceil(at));
  llvm::sort(changes);
  changes.erase(std::unique(changes.begin(), changes.end()), changes.end());
  return changes;
}

/// Where another fit's line overtakes the current one's.
struct Crossing {
  size_t fit;
  double at;
};

/// The fit whose line, cheaper a byte than fit `current`'s, crosses it
/// first (not before `from` bytes) on the interval from `start`; none if
/// none is cheaper a byte.
std::optional<Crossing> nextCrossing(const Pricing &pricing, size_t current,
                                     double start, int64_t from) {
  const auto [curA, curB] = pricing.lines[current].coefficients(
      pricing.segments, start, pricing.model.to);
  std::optional<size_t> next;
  double nextAt = 0;
  for (size_t i = 0; i < pricing.fits.size(); ++i) {
    const auto [a, b] = pricing.lines[i].coefficients(pricing.segments, start,
                                                      pricing.model.to);
    // Not cheaper a byte, or prices past a double's range (a model's time
    // per byte near 1e308 s): no crossing to move to.
    const double crossing = (a - curA) / (curB - b);
    if (!(curB - b > 0) || !std::isfinite(crossing))
      continue;
    double at = std::max(crossing, static_cast<double>(from));
    if (!next || at < nextAt ||
        (at == nextAt && pricing.cheaper(i, *next, at + 1)))
      next = i, nextAt = at;
  }
  if (!next)
    return std::nullopt;
  return Crossing{*next, nextAt};
}

/// Adds the cheapest fits from `start` bytes up to `end`: the lower envelope
/// of their lines there (only the cheapest at `start` unless automatic).
void addEnvelope(const Pricing &pricing, bool automatic, double start,
                 double end, SizeRanges &ranges) {
  size_t current = 0;
  for (size_t i = 1; i < pricing.fits.size(); ++i)
    if (pricing.cheaper(i, current, start))
      current = i;
  int64_t from = static_cast<int64_t>(start);
  while (true) {
    ranges.add(pricing, current, from);
    if (!automatic)
      break;
    const std::optional<Crossing> next =
        nextCrossing(pricing, current, start, from);
    if (!next || next->at + 1 >= end || next->at > 1e18)
      break;
    // The first whole size at which the next is no dearer (a tie goes to
    // fewer words), whatever the rounding of the crossing.
    int64_t at = std::max(from + 1, static_cast<int64_t>(next->at));
    for (int tries = 0; tries < 4 && pricing.cheaper(current, next->fit, at);
         ++tries)
      ++at;
    current = next->fit;
    from = at;
  }
}

/// The cheapest fit for each range of message sizes, from 0 bytes up (one
/// unless automatic).
std::vector<Choice>
cheapestBySize(const std::vector<std::pair<Choice, cost::ScheduleCost>> &fits,
               const CostModel &model, bool automatic) {
  // Each as A·t_s + B·m·t_w on the model's machine (its cores, if it
  // names them).
  std::vector<cost::ScheduleCost::Line> lines;
  for (const auto &fit : fits)
    lines.push_back(fit.second.line(model.machine));
  // Each step in the segment its largest message falls in.
  const std::vector<MessageCost> segments = model.segments();
  const Pricing pricing{fits, model, lines, segments};
  SizeRanges ranges;
  // Between two sizes where some step changes segment, every price is a
  // line a + b·m: there, the lower envelope of the lines. Start with the
  // cheapest at the interval's first size, then move to whichever line
  // with a smaller b crosses first, up to the interval's end.
  const std::vector<double> changes = sizeChanges(pricing, automatic);
  for (size_t k = 0; k < changes.size(); ++k) {
    const double start = changes[k];
    const double end = k + 1 < changes.size() ? changes[k + 1] : 2e18;
    if (start > 1e18)
      break;
    addEnvelope(pricing, automatic, start, end, ranges);
  }
  return std::move(ranges.out);
}

} // namespace

llvm::Expected<std::vector<Choice>> library::resolve(const CollectiveDef &def,
                                                     const Program &file,
                                                     const Library &lib,
                                                     const CostModel &model) {
  std::string what = ir::collectiveKindName(def.collective.kind).str() +
                     " on " + def.topology.describe();
  bool automatic = def.algorithm.empty() || def.algorithm == "auto";
  if (const ir::Schedule *own =
          automatic ? nullptr : file.findSchedule(def.algorithm))
    return ownSchedule(*own, def, model, what);
  Fits fits;
  libraryFits(def, lib, model, automatic, fits);
  builtFits(def, model, automatic, fits);
  if (fits.priced.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "the library has no %s%s%s%s",
        automatic ? "schedule for " : "",
        automatic ? "" : ("'" + def.algorithm + "' schedule for ").c_str(),
        what.c_str(),
        fits.rejected.empty()
            ? ""
            : ("; it has" + rejections(fits.rejected)).c_str());
  return cheapestBySize(fits.priced, model, automatic);
}

std::string library::describe(const Choice &c) {
  std::string out = c.built
                        ? "built for this topology"
                        : std::string(c.fromLibrary ? "from library schedule '"
                                                    : "from schedule '") +
                              c.source + "'";
  if (!c.schedule.algorithm.empty()) {
    out += " (" + c.schedule.algorithm;
    if (const Algorithm *a = findAlgorithm(c.schedule.algorithm))
      out += ", " + a->source.str();
    out += ")";
  }
  if (!c.relabelling.empty())
    out += ", " + c.relabelling;
  if (!c.reliesOn.empty())
    out += ", priced from its rules (too large to simulate), relying on " +
           c.reliesOn;
  if (c.fromBytes > 0)
    out +=
        ", for messages of " + std::to_string(c.fromBytes) + " bytes and more";
  return out;
}

bool library::resolveAll(
    Program &program, const Library &lib, DiagnosticEngine &diags,
    std::vector<std::pair<std::string, std::vector<Choice>>> *choices) {
  const CostModel &model =
      program.models.empty() ? defaultModel() : program.models.front();
  bool ok = true;
  std::vector<ir::Schedule> resolved;
  for (CollectiveDef &def : program.collectives) {
    // Irregular all-to-all patterns depend on P only and are generated for
    // it (compiler/alltoallv), not taken from the library.
    if (def.collective.kind == CollectiveKind::Alltoallv)
      continue;
    llvm::Expected<std::vector<Choice>> picked =
        resolve(def, program, lib, model);
    if (!picked) {
      diags.error(def.algorithmLoc.isValid() ? def.algorithmLoc : def.loc,
                  "cannot resolve '" + def.name +
                      "': " + llvm::toString(picked.takeError()));
      ok = false;
      continue;
    }
    for (Choice &c : *picked) {
      // One choice takes the collective's function name; several are told
      // apart by the message size they start at, and that name goes to the
      // code that picks one at run time.
      c.schedule.name = def.collectiveFunction();
      if (picked->size() > 1)
        c.schedule.name += "_from_" + std::to_string(c.fromBytes) + "_bytes";
      def.resolved.push_back({c.schedule.name, c.fromBytes});
      resolved.push_back(c.schedule);
    }
    if (choices)
      choices->emplace_back(def.name, std::move(*picked));
  }
  for (ir::Schedule &s : resolved)
    program.schedules.push_back(std::move(s));
  return ok;
}
