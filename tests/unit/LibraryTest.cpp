// Resolving collective declarations against the algorithm library
// (compiler/library): which schedule is chosen, how ranks are renamed for
// another root, where `using auto` switches schedules, and that every choice
// is proved when verified again.

#include "library/Library.h"
#include "library/SpanningTree.h"
#include "sema/Sema.h"
#include "simulate/Simulator.h"
#include "verify/Verifier.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>

using namespace collc;

namespace {

/// A SourceMgr with the library loaded, and a way to resolve one file.
class LibraryTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::Expected<library::Library> loaded =
        library::load(COLLC_LIBRARY_DIR, diags);
    ASSERT_TRUE(static_cast<bool>(loaded))
        << llvm::toString(loaded.takeError());
    lib = std::move(*loaded);
  }

  /// Resolves `text`; the messages of any error end up in `errors`.
  Program resolve(const std::string &text) {
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(text, "test.coll");
    llvm::Expected<Program> program = loadSource(std::move(buffer), diags);
    EXPECT_TRUE(static_cast<bool>(program));
    if (!program) {
      llvm::consumeError(program.takeError());
      return {};
    }
    choices.clear();
    library::resolveAll(*program, lib, diags, &choices);
    return std::move(*program);
  }

  std::string errors;
  llvm::raw_string_ostream errorStream{errors};
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags{sourceMgr, errorStream, false};
  library::Library lib;
  std::vector<std::pair<std::string, std::vector<library::Choice>>> choices;
};

struct Expected {
  const char *declaration;
  const char *source;      // the library schedule chosen
  const char *relabelling; // "" when none
};

TEST_F(LibraryTest, ChoosesTheScheduleThatFits) {
  const Expected table[] = {
      {"allgather on torus(8, 8)", "mesh_allgather", ""},
      {"allgather on ring(5)", "ring_allgather", ""},
      {"broadcast(root: 3) on ring(9)", "ring_bc", ""},
      {"broadcast(root: 0) on hypercube(dim: 4)", "hypercube_bc", ""},
      {"broadcast(root: 9) on hypercube(dim: 4)", "hypercube_bc",
       "rank r plays r ^ 9"},
      {"reduce(root: 2, op: sum) on ring(12)", "ring_reduce",
       "rank r plays (r + 1) % 12"},
      {"scatter(root: 3) on hypercube(dim: 4)", "hypercube_scatter",
       "rank r plays r ^ 3"},
      {"alltoall on torus(4, 4) using mesh", "mesh_alltoall", ""},
      {"alltoall on hypercube(dim: 3) using pairwise_exchange",
       "pairwise_exchange", ""},
      {"shift(q: 5) on torus(4, 4)", "torus_shift", ""},
      // Families over the amount: any q.
      {"shift(q: 6) on torus(4, 4)", "torus_shift", ""},
      {"shift(q: 7) on ring(9)", "ring_shift", ""},
      {"shift(q: 7) on hypercube(dim: 3)", "hypercube_shift_ecube", ""},
      {"reduce_scatter(op: max) on full(6) using ring", "ring_reduce_scatter",
       ""},
      // Algorithm 4.9 where the cube's pattern fits; the doubling distances
      // where every pair is linked; the chain on a ring.
      {"scan(op: sum) on hypercube(dim: 3)", "hypercube_scan", ""},
      {"scan(op: sum) on ring(6)", "linear_scan", ""},
      {"scan(op: max) on full(12)", "full_scan", ""},
      {"exscan(op: sum) on full(12)", "full_exscan", ""},
      {"exscan(op: sum) on ring(12)", "linear_exscan", ""},
      // Eq. 4.5 for any p: the ranks above the largest power of two fold in
      // first and take the sum back last.
      {"allreduce(op: sum) on full(6) using recursive_doubling",
       "full_allreduce", ""},
      {"allgather on full(6) using recursive_doubling", "full_allgather", ""},
      {"reduce_scatter(op: sum) on full(6) using recursive_doubling",
       "full_reduce_scatter", ""},
      // Problem 4.12: the ring's algorithms without the wraparound.
      {"allgather on linear(6)", "linear_allgather", ""},
      {"reduce_scatter(op: sum) on linear(6)", "linear_reduce_scatter", ""},
      {"allreduce(op: sum) on linear(6)", "linear_allreduce_split", ""},
      {"alltoall on linear(6)", "linear_alltoall", ""},
      {"allreduce(op: sum) on tree(leaves: 8)", "tree_allreduce", ""},
      {"broadcast(root: 0) on tree(leaves: 16)", "tree_bc", ""},
      // tree(leaves: 1 << h): the member is solved from the leaves.
      {"broadcast(root: 0) on tree(leaves: 2)", "tree_bc", ""},
      {"reduce(root: 5, op: sum) on tree(leaves: 4096)", "tree_reduce",
       "rank r plays r ^ 5"},
      // 000 §4.7.1: the only all-reduce on a torus is a composition.
      {"allreduce(op: sum) on torus(4, 4)", "mesh_allreduce_split", ""},
      {"allreduce(op: sum) on ring(6)", "ring_allreduce_split", ""},
  };
  for (const Expected &e : table) {
    SCOPED_TRACE(e.declaration);
    Program program =
        resolve(std::string("collective x = ") + e.declaration + ";\n");
    ASSERT_EQ(errors, "");
    ASSERT_EQ(choices.size(), 1u);
    ASSERT_GE(choices[0].second.size(), 1u);
    // The choice for the smallest messages; larger ones may switch to a
    // split-message composition (checked below).
    const library::Choice &c = choices[0].second[0];
    EXPECT_EQ(c.source, e.source);
    EXPECT_EQ(c.relabelling, e.relabelling);
    const auto &resolved = program.collectives[0].resolved;
    ASSERT_EQ(resolved.size(), choices[0].second.size());
    EXPECT_EQ(resolved[0].schedule,
              resolved.size() == 1 ? "x" : "x_from_0_bytes");
    for (const auto &r : resolved)
      EXPECT_NE(program.findSchedule(r.schedule), nullptr) << r.schedule;
  }
}

// Table 4.1's min of two costs (000 §4.7.1): under the default model (1 µs,
// 0.25 ns/byte) `using auto` switches to the split message from the first
// size where it is strictly cheaper.
TEST_F(LibraryTest, Table4_1_SplitAboveTheCutOff) {
  struct Expected {
    const char *declaration;
    const char *small, *large; // the library schedules below and above
    const char *relabelling;   // of the large one
    int64_t fromBytes, startups;
    const char *words;
  };
  const Expected table[] = {
      // Algorithm 4.1, 4 t_s + 4 m t_w on 16 nodes, against Eq 4.13,
      // 8 t_s + 15/8 m t_w: 4 t_s = 17/8 m t_w at m = 7529.4 bytes; rank 9
      // is the root by XOR in both.
      {"broadcast(root: 9) on hypercube(dim: 4)", "hypercube_bc",
       "hypercube_bc_split", "rank r plays r ^ 9", 7530, 8, "15/8"},
      // Eq 4.5 against Eq 4.14: the same costs, the same cut-off.
      {"allreduce(op: sum) on hypercube(dim: 4)", "hypercube_allreduce",
       "hypercube_allreduce_split", "", 7530, 8, "15/8"},
      // Figure 4.2 on a ring of 8 from root 5, 3 t_s + 3 m t_w, against the
      // binomial scatter and Algorithm 4.4, 10 t_s + 7/4 m t_w: 7 t_s =
      // 5/4 m t_w at m = 22400 bytes, where the two cost the same.
      {"broadcast(root: 5) on ring(8)", "linear_bc", "ring_bc_split",
       "rank r plays (r + 3) % 8", 22401, 10, "7/4"},
  };
  for (const Expected &e : table) {
    SCOPED_TRACE(e.declaration);
    resolve(std::string("collective x = ") + e.declaration + ";\n");
    ASSERT_EQ(errors, "");
    ASSERT_EQ(choices.size(), 1u);
    const std::vector<library::Choice> &c = choices[0].second;
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].source, e.small);
    EXPECT_EQ(c[1].source, e.large);
    EXPECT_EQ(c[1].relabelling, e.relabelling);
    EXPECT_EQ(c[1].fromBytes, e.fromBytes);
    EXPECT_EQ(c[1].startups, e.startups);
    EXPECT_EQ(c[1].words, e.words);
  }
}

// Every root of every rooted collective: symmetries move the library's root
// on rings and tori (rotations), hypercubes and trees (XOR), and to the corners
// and ends of meshes and linear arrays (reflections); any other root of a mesh
// or linear array by rotating its coordinates as if they wrapped around. The
// renamed schedule keeps all five properties, correctness by induction.
TEST_F(LibraryTest, EveryRootIsProvedAfterRenaming) {
  struct Case {
    const char *topology;
    std::vector<int> roots;
    bool invariants; // the library's schedules for it have loop invariants
  };
  auto all = [](int ranks) {
    std::vector<int> roots(ranks);
    std::iota(roots.begin(), roots.end(), 0);
    return roots;
  };
  const Case cases[] = {{"ring(8)", all(8), true},
                        {"hypercube(dim: 3)", all(8), false},
                        {"torus(3, 3)", all(9), true},
                        {"full(8)", all(8), false},
                        {"mesh(3, 4)", all(12), true},
                        {"linear(7)", all(7), true},
                        {"hypercube(dim: 3, order: gray)", all(8), false},
                        {"tree(leaves: 16)", all(16), false}};
  const char *kinds[] = {"broadcast(root: R)", "reduce(root: R, op: sum)",
                         "scatter(root: R)", "gather(root: R)"};
  int proved = 0;
  for (const Case &c : cases) {
    for (const char *kind : kinds) {
      for (int root : c.roots) {
        auto [before, after] = llvm::StringRef(kind).split('R');
        std::string what = (before + llvm::Twine(root) + after).str();
        std::string text =
            "collective x = " + what + " on " + c.topology + ";\n";
        SCOPED_TRACE(text);
        errors.clear();
        Program program = resolve(text);
        ASSERT_EQ(errors, "");
        // Every choice, the split-message compositions for large messages
        // included.
        ASSERT_FALSE(program.collectives[0].resolved.empty());
        for (const auto &choice : program.collectives[0].resolved) {
          const ir::Schedule *s = program.findSchedule(choice.schedule);
          ASSERT_NE(s, nullptr);
          // The simulator checks all five properties on the one member; one
          // root per topology and kind also goes through Z3.
          std::vector<int64_t> params;
          for (const ir::Parameter &q : s->params)
            params.push_back(q.range->first);
          llvm::Expected<simulate::SimulationResult> run =
              simulate::simulate(*s, params);
          ASSERT_TRUE(static_cast<bool>(run))
              << llvm::toString(run.takeError());
          EXPECT_TRUE(run->allHold());
          if (root == c.roots.back()) {
            // Provable, whatever the machine's load: no time limit (a loaded
            // machine once took one query past 60 s, which fell back to
            // simulation). ctest's limit bounds the test.
            verify::VerifyOptions options;
            options.timeoutSeconds = 0;
            llvm::Expected<verify::ScheduleReport> report =
                verify::verifySchedule(*s, options);
            ASSERT_TRUE(static_cast<bool>(report))
                << llvm::toString(report.takeError());
            EXPECT_EQ(report->verdict(), verify::Status::Proved);
            // The renamed senders keep the loop invariants provable.
            for (const verify::PropertyResult &r : report->properties) {
              if (c.invariants && r.property == verify::Property::Correctness) {
                EXPECT_EQ(r.method, "z3 (induction)");
              }
            }
          }
        }
        ++proved;
      }
    }
  }
  EXPECT_EQ(proved, 4 * (8 + 8 + 9 + 8 + 12 + 7 + 8 + 16));
}

TEST_F(LibraryTest, AMeshCornerIsReachedByReflection) {
  resolve("collective x = broadcast(root: 11) on mesh(3, 4);\n");
  ASSERT_EQ(errors, "");
  ASSERT_EQ(choices.size(), 1u);
  const std::vector<library::Choice> &c = choices[0].second;
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].source, "mesh_bc");
  EXPECT_EQ(c[0].relabelling, "rank r plays (2 - r / 4) * 4 + (3 - r % 4)");
  // Rank 5, (1, 1), is inside the mesh: no reflection moves it to the
  // corner, so both coordinates rotate; rank 8, (2, 0), is reflected in the
  // row and stays in the column.
  resolve("collective y = broadcast(root: 5) on mesh(3, 4);\n"
          "collective z = broadcast(root: 10) on mesh(3, 4);\n");
  ASSERT_EQ(errors, "");
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].second[0].relabelling,
            "rank r plays (r / 4 + 2) % 3 * 4 + (r % 4 + 3) % 4");
  EXPECT_EQ(choices[1].second[0].relabelling,
            "rank r plays (2 - r / 4) * 4 + (r % 4 + 2) % 4");
}

// A rotation of a mesh or linear array is no symmetry: a schedule whose
// messages cross in opposite directions may share a link once renamed. Such
// a renaming does not fit; the error says what the simulator found.
TEST_F(LibraryTest, ARenamingThatCongestsDoesNotFit) {
  // On linear(4) from rank 0: 0 -> 3, then 0 -> 2 and 3 -> 1, which go in
  // opposite directions. Renamed for root 1 (rank r plays (r + 3) % 4) the
  // second step is 1 -> 3 and 0 -> 2, both over the link 1 -> 2.
  resolve("schedule crossing : broadcast(root: 0) on linear(4) {\n"
          "  step { 0 -> 3 }\n"
          "  step { 0 -> 2; 3 -> 1 }\n"
          "}\n"
          "collective fine = broadcast(root: 3) on linear(4) using crossing;\n"
          "collective y = broadcast(root: 1) on linear(4) using crossing;\n");
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].first, "fine");
  ASSERT_EQ(choices[0].second.size(), 1u);
  EXPECT_EQ(choices[0].second[0].relabelling, "rank r plays 3 - r");
  EXPECT_NE(errors.find("test.coll:6:54: error: cannot resolve 'y': schedule "
                        "'crossing' cannot run broadcast on linear(4): with "
                        "rank r plays (r + 3) % 4 it does not simulate "
                        "correctly there (congestion at step 2: channel 1->2 "
                        "carries 2 messages)"),
            std::string::npos)
      << errors;
}

TEST_F(LibraryTest, AutoSwitchesScheduleWhereTheCostsCross) {
  // 000 §4.5.3: 3·t_s + 12·m·t_w against Alg 4.10's 7·t_s + 7·m·t_w on 8
  // ranks; equal where 4·t_s = 5·m·t_w, m = 4000 bytes for these figures.
  Program program =
      resolve("model lan = { ts: 10us, tw: 2ns/byte, ports: single };\n"
              "collective a = alltoall on hypercube(dim: 3);\n");
  ASSERT_EQ(errors, "");
  ASSERT_EQ(choices.size(), 1u);
  const std::vector<library::Choice> &picked = choices[0].second;
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_EQ(picked[0].source, "hypercube_alltoall");
  EXPECT_EQ(picked[0].fromBytes, 0);
  EXPECT_EQ(picked[0].startups, 3);
  EXPECT_EQ(picked[0].words, "12");
  EXPECT_EQ(picked[1].source, "pairwise_exchange");
  EXPECT_EQ(picked[1].fromBytes, 4000);
  EXPECT_EQ(picked[1].startups, 7);
  EXPECT_EQ(picked[1].words, "7");
  ASSERT_EQ(program.collectives[0].resolved.size(), 2u);
  EXPECT_EQ(program.collectives[0].resolved[1].schedule, "a_from_4000_bytes");

  // With start-ups ten times dearer the switch moves ten times further out.
  program = resolve("model wan = { ts: 100us, tw: 2ns/byte, ports: single };\n"
                    "collective a = alltoall on hypercube(dim: 3);\n");
  ASSERT_EQ(choices[0].second.size(), 2u);
  EXPECT_EQ(choices[0].second[1].fromBytes, 40000);
}

TEST_F(LibraryTest, AutoOnSharedCoresNeverSplits) {
  // A ring of 8 ranks on 2 cores, as collc calibrate measured it: on its
  // own cores each rank's broadcast switches from the binomial tree to the
  // split of Eq 4.13 (6·t_s + 7/4·m·t_w against 3·t_s + 3·m·t_w); sharing
  // 2 cores, the split costs 19·t_s + 9/2·m·t_w and never pays, and 000
  // §4.1's star (4·t_s + 7·m·t_w, its root's 7·m one core's work) beats
  // the tree (7·t_s + 4·m·t_w) while m·t_w < t_s: below 1135/0.170 bytes.
  Program program =
      resolve("model own = { ts: 1135ns, tw: 170ps/byte, ports: single };\n"
              "collective b = broadcast(root: 0) on hypercube(dim: 3);\n");
  ASSERT_EQ(errors, "");
  ASSERT_EQ(choices.size(), 1u);
  ASSERT_EQ(choices[0].second.size(), 2u);
  EXPECT_EQ(choices[0].second[1].source, "hypercube_bc_split");
  program = resolve(
      "model shared = { ts: 1135ns, tw: 170ps/byte, ports: single, "
      "cores: 2 };\n"
      "collective b = broadcast(root: 0) on hypercube(dim: 3);\n"
      "collective s = scan(op: sum) on linear(8);\n");
  ASSERT_EQ(errors, "");
  ASSERT_EQ(choices.size(), 2u);
  ASSERT_EQ(choices[0].second.size(), 2u);
  EXPECT_EQ(choices[0].second[0].source, "star_bc");
  EXPECT_EQ(choices[0].second[1].source, "hypercube_bc");
  EXPECT_NEAR(choices[0].second[1].fromBytes, 1135.0 / 0.170, 2);
  EXPECT_EQ(program.models[0].machine.cores, 2);
}

TEST_F(LibraryTest, AutoOnSharedCoresTakesTheStar) {
  // Scatter and gather on 8 ranks: on their own cores the binomial tree
  // (3·t_s + 7·m·t_w) beats 000 §4.1's star (7·t_s + 7·m·t_w) at every
  // size. On 2 cores the star's messages wait on nothing and go together
  // (4·t_s + 7·m·t_w, its root's 7·m one core's work), where the tree's
  // last steps are the cores' work (7·t_s + 8·m·t_w): the star at every
  // size.
  const std::string collectives =
      "collective s = scatter(root: 0) on hypercube(dim: 3);\n"
      "collective g = gather(root: 0) on hypercube(dim: 3);\n";
  resolve("model own = { ts: 1135ns, tw: 170ps/byte, ports: single };\n" +
          collectives);
  ASSERT_EQ(errors, "");
  ASSERT_EQ(choices.size(), 2u);
  for (const auto &choice : choices) {
    ASSERT_EQ(choice.second.size(), 1u);
    EXPECT_NE(choice.second[0].source.find("hypercube_"), std::string::npos)
        << choice.second[0].source;
  }
  resolve("model shared = { ts: 1135ns, tw: 170ps/byte, ports: single, "
          "cores: 2 };\n" +
          collectives);
  ASSERT_EQ(errors, "");
  ASSERT_EQ(choices.size(), 2u);
  ASSERT_EQ(choices[0].second.size(), 1u);
  EXPECT_EQ(choices[0].second[0].source, "star_scatter");
  ASSERT_EQ(choices[1].second.size(), 1u);
  EXPECT_EQ(choices[1].second[0].source, "star_gather");
}

TEST_F(LibraryTest, NothingFitsIsAnErrorThatSaysWhy) {
  resolve("collective s = shift(q: 1) on linear(4);\n");
  EXPECT_NE(errors.find("test.coll:1:1: error: cannot resolve 's': the "
                        "library has no schedule for shift on linear(4)"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("ring_shift: it runs on ring, which linear(4) does "
                        "not contain"),
            std::string::npos)
      << errors;
  // A star's hub is the only node like it: no renaming moves the root.
  errors.clear();
  resolve("topology star = graph(4) { 0-1, 0-2, 0-3 };\n"
          "schedule hub : broadcast(root: 0) on star {\n"
          "  step { 0 -> 1 }\n  step { 0 -> 2 }\n  step { 0 -> 3 }\n}\n"
          "collective leaf = broadcast(root: 2) on star using hub;\n");
  EXPECT_NE(errors.find("its root is 0 and graph(4) has no relabelling that "
                        "moves it to 2"),
            std::string::npos)
      << errors;
}

// On random connected graphs, every tree collective from every root
// simulates with all five properties holding, in at most p - 1 steps a
// phase (the rooted ones have one, the others two); on a path from one
// end, exactly p - 1.
TEST(SpanningTreeTest, EveryRootOfRandomGraphsHolds) {
  using CK = ir::CollectiveKind;
  std::mt19937 random(29);
  for (int trial = 0; trial < 40; ++trial) {
    int64_t n = 2 + trial % 11;
    std::vector<std::pair<int64_t, int64_t>> edges;
    for (int64_t v = 1; v < n; ++v)
      edges.push_back(
          {std::uniform_int_distribution<int64_t>(0, v - 1)(random), v});
    for (int extra = 0; extra < trial % 4 && n > 3; ++extra) {
      int64_t a = random() % n, b = random() % n;
      if (a != b && !llvm::is_contained(edges, std::make_pair(a, b)) &&
          !llvm::is_contained(edges, std::make_pair(b, a)))
        edges.push_back({a, b});
    }
    llvm::Expected<Topology> graph =
        Topology::make(TopologyKind::Graph, {n}, edges);
    ASSERT_TRUE(static_cast<bool>(graph)) << llvm::toString(graph.takeError());
    for (CK kind : {CK::Broadcast, CK::Reduce, CK::Scatter, CK::Gather,
                    CK::Allreduce, CK::Allgather, CK::ReduceScatter,
                    CK::Alltoall, CK::Shift}) {
      bool rooted = kind == CK::Broadcast || kind == CK::Reduce ||
                    kind == CK::Scatter || kind == CK::Gather;
      for (int64_t root = 0; root < (rooted ? n : 1); ++root) {
        ir::Collective want;
        want.kind = kind;
        want.root = root;
        want.shift = trial % n;
        SCOPED_TRACE(graph->describe() + " " +
                     ir::collectiveKindName(kind).str() + " root " +
                     std::to_string(root) + " trial " + std::to_string(trial));
        llvm::Expected<ir::Schedule> s =
            library::spanningTreeSchedule("t", want, *graph, {});
        ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
        size_t steps = s->body.size();
        EXPECT_LE(steps, static_cast<size_t>((rooted ? 1 : 2) * (n - 1)));
        llvm::Expected<simulate::SimulationResult> run =
            simulate::simulate(*s, {});
        ASSERT_TRUE(static_cast<bool>(run)) << llvm::toString(run.takeError());
        EXPECT_TRUE(run->allHold());
      }
    }
  }
  // A path from one end: one hop a step.
  llvm::Expected<Topology> path = Topology::make(
      TopologyKind::Graph, {6}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}});
  ASSERT_TRUE(static_cast<bool>(path));
  ir::Collective bc;
  llvm::Expected<ir::Schedule> s =
      library::spanningTreeSchedule("t", bc, *path, {});
  ASSERT_TRUE(static_cast<bool>(s));
  EXPECT_EQ(s->body.size(), 5u);
  // A scan is refused, with why.
  ir::Collective scan;
  scan.kind = CK::Scan;
  llvm::Expected<ir::Schedule> none =
      library::spanningTreeSchedule("t", scan, *path, {});
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(llvm::toString(none.takeError()), "a spanning tree gives no scan");
}

} // namespace
