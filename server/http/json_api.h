// The read-only JSON API under /api/v1/: a thin adapter from HTTP requests to
// the study engine's ListStudies, GetStudy, ListTrials, GetParetoFront and
// ListModels.
#ifndef METAOPT_SERVER_HTTP_JSON_API_H_
#define METAOPT_SERVER_HTTP_JSON_API_H_

#include "absl/status/status.h"
#include "core/study/study_engine.h"
#include "server/http/http_listener.h"
#include "server/token_auth.h"

namespace metaopt::http {

// Routes (GET or HEAD; the bodies are the gRPC responses in proto3 JSON,
// lowerCamelCase field names, default values omitted):
//   /api/v1/studies?page_size=N&page_token=T          ListStudiesResponse
//   /api/v1/studies/{study_id}                        GetStudyResponse
//   /api/v1/studies/{study_id}/trials?page_size=N&page_token=T&state=S
//                                                     ListTrialsResponse
//   /api/v1/studies/{study_id}/pareto-front?page_size=N&page_token=T
//                                                     GetParetoFrontResponse
//   /api/v1/models                                    ListModelsResponse
// S is a TrialState name (TRIAL_STATE_FAILED) or its suffix in any case
// (failed). Errors are {"error": {"code", "status", "message"}} with the HTTP
// code of HttpStatusOf; a bad query parameter is 400 naming it, its value and
// the rule. With an authenticator every request needs "Authorization: Bearer
// <token>" (401 otherwise) and sees only its owner's studies.
//
// Thread-safe (stateless; the engine and authenticator are thread-safe). Both
// must outlive the API; `auth` may be null (no authentication).
class JsonApi {
 public:
  JsonApi(study::StudyEngine* engine, const server::TokenAuthenticator* auth)
      : engine_(engine), auth_(auth) {}

  // Answers a request whose path starts with /api/.
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  study::StudyEngine* const engine_;
  const server::TokenAuthenticator* const auth_;
};

// The one mapping from status codes to HTTP codes (Google's API mapping:
// INVALID_ARGUMENT 400, UNAUTHENTICATED 401, NOT_FOUND 404, ...).
int HttpStatusOf(absl::StatusCode code);

// The JSON error response for a non-OK `status`, with the HTTP code of
// HttpStatusOf or `http_status` (405 for a method the API does not serve, a
// code no status maps to).
HttpResponse ErrorResponse(const absl::Status& status);
HttpResponse ErrorResponse(const absl::Status& status, int http_status);

}  // namespace metaopt::http

#endif  // METAOPT_SERVER_HTTP_JSON_API_H_
