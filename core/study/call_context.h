// Who is calling and by when the answer is needed: what the transport knows
// about an RPC that the study engine acts on.
#ifndef METAOPT_CORE_STUDY_CALL_CONTEXT_H_
#define METAOPT_CORE_STUDY_CALL_CONTEXT_H_

#include <string>

#include "absl/time/time.h"

namespace metaopt::study {

struct CallContext {
  // The authenticated owner; studies are namespaced by it. Empty when the
  // server runs without authentication (one shared namespace).
  std::string owner;
  // The caller's deadline; work that cannot finish by then should degrade
  // (for example to a cheaper suggestion) rather than time out.
  absl::Time deadline = absl::InfiniteFuture();
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_CALL_CONTEXT_H_
