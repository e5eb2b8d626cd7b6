// Core's own behaviour: what ends with a client's session (see core.h), and the run id.
#include "core/core.h"

#include <random>
#include <string>

namespace larder::server {

std::string NewRunId() {
  std::random_device device;
  std::uniform_int_distribution<int> digit(0, 15);
  std::string id(40, '0');
  for (char& c : id) c = "0123456789abcdef"[digit(device)];
  return id;
}

void Core::Forget(ClientState& client, FailedImportKeys keys) {
  pubsub.Forget(client);
  watched.UnwatchAll(client.id);
  tracking.Disable(client);
  monitors.Remove(client);
  if (!client.importing) return;
  client.importing = false;
  const std::optional<cluster::SlotRange> failed = cluster.ImportLinkClosed(client.id);
  if (!failed || keys == FailedImportKeys::kKeep) return;
  const cluster::SlotRange range = *failed;
  const uint64_t link = client.id;
  run_in_background([this, range, link] { DeleteFailedImport(range, link); });
}

void Core::DeleteFailedImport(cluster::SlotRange range, uint64_t link) {
  std::shared_lock<FairSharedMutex> lock(exec_lock);
  for (const std::string& key : cluster::KeysInRange(store, range)) {
    std::lock_guard still(import_starts);
    const cluster::ImportInfo now = cluster.Import();
    const bool still_this_failure =
        now.state == cluster::ImportState::kError && now.link == link && now.range == range;
    // An import of slots of this range started since (by any link, this one again too): its
    // start deleted them, and what its link writes from then on stays.
    if (!still_this_failure && now.range && now.range->Overlaps(range)) return;
    if (store.Delete(key).ok()) events.KeyLeft(key);
  }
}

}  // namespace larder::server
