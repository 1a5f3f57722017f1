#include "ir/Schedule.h"

#include "llvm/ADT/StringSwitch.h"

using namespace collc::ir;

llvm::StringRef collc::ir::collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Reduce:
    return "reduce";
  case CollectiveKind::Allreduce:
    return "allreduce";
  case CollectiveKind::Allgather:
    return "allgather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::Scatter:
    return "scatter";
  case CollectiveKind::Gather:
    return "gather";
  case CollectiveKind::Scan:
    return "scan";
  case CollectiveKind::Alltoall:
    return "alltoall";
  case CollectiveKind::Alltoallv:
    return "alltoallv";
  case CollectiveKind::Shift:
    return "shift";
  }
  return "?";
}

std::optional<CollectiveKind> collc::ir::parseCollectiveKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<CollectiveKind>>(name)
      .Case("broadcast", CollectiveKind::Broadcast)
      .Case("reduce", CollectiveKind::Reduce)
      .Case("allreduce", CollectiveKind::Allreduce)
      .Case("allgather", CollectiveKind::Allgather)
      .Case("reduce_scatter", CollectiveKind::ReduceScatter)
      .Case("scatter", CollectiveKind::Scatter)
      .Case("gather", CollectiveKind::Gather)
      .Case("scan", CollectiveKind::Scan)
      .Case("alltoall", CollectiveKind::Alltoall)
      .Case("alltoallv", CollectiveKind::Alltoallv)
      .Case("shift", CollectiveKind::Shift)
      .Default(std::nullopt);
}

bool collc::ir::isReduction(CollectiveKind kind) {
  return kind == CollectiveKind::Reduce || kind == CollectiveKind::Allreduce ||
         kind == CollectiveKind::ReduceScatter || kind == CollectiveKind::Scan;
}

void collc::ir::rewriteBody(
    std::vector<BodyItem> &body,
    const std::function<ExprRef(const ExprRef &, ExprRole)> &fn,
    const std::function<void(Loop &)> &onLoop) {
  for (BodyItem &item : body) {
    if (auto *loop = std::get_if<std::shared_ptr<Loop>>(&item)) {
      auto copy = std::make_shared<Loop>(**loop);
      if (onLoop)
        onLoop(*copy);
      copy->lo = fn(copy->lo, ExprRole::LoopBound);
      copy->hi = fn(copy->hi, ExprRole::LoopBound);
      for (Invariant &inv : copy->invariants)
        inv.holds = fn(inv.holds, ExprRole::Invariant);
      rewriteBody(copy->body, fn, onLoop);
      *loop = std::move(copy);
      continue;
    }
    for (TransferRule &rule : std::get<Step>(item).rules) {
      rule.guard = fn(rule.guard, ExprRole::Guard);
      rule.peer = fn(rule.peer, ExprRole::Peer);
      rule.selector = fn(rule.selector, ExprRole::Selector);
      for (Delivery &d : rule.into)
        d.when = fn(d.when, ExprRole::DeliveryWhen);
    }
  }
}
