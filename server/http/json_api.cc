#include "server/http/json_api.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace metaopt::http {
namespace {

constexpr char kJson[] = "application/json; charset=utf-8";
constexpr char kStudiesPrefix[] = "/api/v1/studies/";
constexpr char kTrialsSuffix[] = "/trials";
constexpr char kParetoFrontSuffix[] = "/pareto-front";
// The engine gets this long to answer (it may degrade work to meet it).
constexpr absl::Duration kCallDeadline = absl::Seconds(30);

using Query = absl::flat_hash_map<std::string, std::string>;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded decoding ('+' is a space).
absl::StatusOr<std::string> Decode(absl::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] != '%') {
      out += text[i];
    } else if (i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
               HexValue(text[i + 2]) >= 0) {
      out +=
          static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("query: \"", text.substr(0, 64),
                       "\" has a '%' not followed by two hex digits"));
    }
  }
  return out;
}

// The query's parameters; INVALID_ARGUMENT for one outside `known`, one given
// twice or a bad escape.
absl::StatusOr<Query> ParseQuery(absl::string_view query,
                                 const std::vector<std::string>& known) {
  Query parameters;
  for (absl::string_view part : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(part, absl::MaxSplits('=', 1));
    METAOPT_ASSIGN_OR_RETURN(std::string name, Decode(kv.first));
    METAOPT_ASSIGN_OR_RETURN(std::string value, Decode(kv.second));
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query parameter \"", name.substr(0, 64), "\" is unknown here",
          known.empty()
              ? " (this path takes none)"
              : absl::StrCat(" (known: ", absl::StrJoin(known, ", "), ")")));
    }
    if (!parameters.emplace(name, std::move(value)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": given more than once"));
    }
  }
  return parameters;
}

// page_size: empty or absent is 0 (the engine's default); the engine checks
// the range.
absl::StatusOr<int> PageSize(const Query& query) {
  auto it = query.find("page_size");
  if (it == query.end() || it->second.empty()) return 0;
  int size = 0;
  const bool digits =
      std::all_of(it->second.begin(), it->second.end(),
                  [](char c) { return absl::ascii_isdigit(c); });
  if (!digits || it->second.size() > 9 ||
      !absl::SimpleAtoi(it->second, &size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: \"", it->second.substr(0, 64),
                     "\" must be a whole number (0 means the default)"));
  }
  return size;
}

std::string PageToken(const Query& query) {
  auto it = query.find("page_token");
  return it == query.end() ? "" : it->second;
}

absl::StatusOr<v1::TrialState> State(const Query& query) {
  auto it = query.find("state");
  if (it == query.end() || it->second.empty()) {
    return v1::TRIAL_STATE_UNSPECIFIED;
  }
  std::string name = absl::AsciiStrToUpper(it->second);
  if (!absl::StartsWith(name, "TRIAL_STATE_")) {
    name = absl::StrCat("TRIAL_STATE_", name);
  }
  v1::TrialState state;
  if (!v1::TrialState_Parse(name, &state) ||
      state == v1::TRIAL_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state: \"", it->second.substr(0, 64),
        "\" must be one of active, completed, failed, infeasible, abandoned, "
        "stale, stopped (or empty: all)"));
  }
  return state;
}

template <typename Message>
HttpResponse JsonResponse(const absl::StatusOr<Message>& message) {
  if (!message.ok()) return ErrorResponse(message.status());
  HttpResponse response;
  response.content_type = kJson;
  response.headers.emplace_back("Cache-Control", "no-store");
  const auto converted =
      google::protobuf::util::MessageToJsonString(*message, &response.body);
  if (!converted.ok()) {
    return ErrorResponse(absl::InternalError(
        absl::StrCat("encoding the response as JSON: ", converted.ToString())));
  }
  return response;
}

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

HttpResponse ErrorResponse(const absl::Status& status) {
  return ErrorResponse(status, HttpStatusOf(status.code()));
}

HttpResponse ErrorResponse(const absl::Status& status, int http_status) {
  HttpResponse response;
  response.status = http_status;
  response.content_type = kJson;
  response.headers.emplace_back("Cache-Control", "no-store");
  if (status.code() == absl::StatusCode::kUnauthenticated) {
    response.headers.emplace_back("WWW-Authenticate",
                                  "Bearer realm=\"metaopt\"");
  }
  const nlohmann::json body = {
      {"error",
       {{"code", response.status},
        {"status", absl::StatusCodeToString(status.code())},
        {"message", std::string(status.message())}}}};
  // Replaces invalid UTF-8 (an echoed query value) rather than throwing.
  response.body =
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  response.body += '\n';
  return response;
}

HttpResponse JsonApi::Handle(const HttpRequest& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse response = ErrorResponse(
        absl::UnimplementedError(
            absl::StrCat("method ", Quote(request.method.substr(0, 16)),
                         " not allowed: the API is read-only (GET, HEAD)")),
        405);
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  study::CallContext context;
  context.deadline = absl::Now() + kCallDeadline;
  if (auth_ != nullptr && request.authorization_headers > 1) {
    // Which token would count is ambiguous: refuse, as the gRPC service does.
    return ErrorResponse(absl::UnauthenticatedError(absl::StrCat(
        "authorization: sent ", request.authorization_headers,
        " times; send one 'Authorization: Bearer <token>' header")));
  }
  if (auth_ != nullptr) {
    absl::StatusOr<std::string> owner = auth_->Authenticate(
        request.authorization.has_value()
            ? std::optional<absl::string_view>(*request.authorization)
            : std::nullopt);
    if (!owner.ok()) return ErrorResponse(owner.status());
    context.owner = *std::move(owner);
  }
  const std::string& path = request.path;
  if (path == "/api/v1/studies") {
    absl::StatusOr<Query> query =
        ParseQuery(request.query, {"page_size", "page_token"});
    if (!query.ok()) return ErrorResponse(query.status());
    v1::ListStudiesRequest list;
    absl::StatusOr<int> page_size = PageSize(*query);
    if (!page_size.ok()) return ErrorResponse(page_size.status());
    list.set_page_size(*page_size);
    list.set_page_token(PageToken(*query));
    return JsonResponse(engine_->ListStudies(list, context));
  }
  if (path == "/api/v1/models") {
    absl::StatusOr<Query> query = ParseQuery(request.query, {});
    if (!query.ok()) return ErrorResponse(query.status());
    return JsonResponse(engine_->ListModels({}, context));
  }
  if (absl::StartsWith(path, kStudiesPrefix)) {
    std::string study_id = path.substr(sizeof(kStudiesPrefix) - 1);
    const bool trials = absl::EndsWith(study_id, kTrialsSuffix);
    if (trials) study_id.resize(study_id.size() - (sizeof(kTrialsSuffix) - 1));
    const bool front =
        !trials && absl::EndsWith(study_id, kParetoFrontSuffix);
    if (front) {
      study_id.resize(study_id.size() - (sizeof(kParetoFrontSuffix) - 1));
    }
    if (!study_id.empty() && study_id.find('/') == std::string::npos) {
      if (front) {
        absl::StatusOr<Query> query =
            ParseQuery(request.query, {"page_size", "page_token"});
        if (!query.ok()) return ErrorResponse(query.status());
        v1::GetParetoFrontRequest get;
        get.set_study_id(study_id);
        absl::StatusOr<int> page_size = PageSize(*query);
        if (!page_size.ok()) return ErrorResponse(page_size.status());
        get.set_page_size(*page_size);
        get.set_page_token(PageToken(*query));
        return JsonResponse(engine_->GetParetoFront(get, context));
      }
      if (!trials) {
        absl::StatusOr<Query> query = ParseQuery(request.query, {});
        if (!query.ok()) return ErrorResponse(query.status());
        v1::GetStudyRequest get;
        get.set_study_id(study_id);
        return JsonResponse(engine_->GetStudy(get, context));
      }
      absl::StatusOr<Query> query =
          ParseQuery(request.query, {"page_size", "page_token", "state"});
      if (!query.ok()) return ErrorResponse(query.status());
      v1::ListTrialsRequest list;
      list.set_study_id(study_id);
      absl::StatusOr<int> page_size = PageSize(*query);
      if (!page_size.ok()) return ErrorResponse(page_size.status());
      list.set_page_size(*page_size);
      list.set_page_token(PageToken(*query));
      absl::StatusOr<v1::TrialState> state = State(*query);
      if (!state.ok()) return ErrorResponse(state.status());
      list.set_state(*state);
      return JsonResponse(engine_->ListTrials(list, context));
    }
  }
  return ErrorResponse(absl::NotFoundError(
      absl::StrCat("no API at ", path.substr(0, 128),
                   " (see /api/v1/studies, /api/v1/studies/{id}, "
                   "/api/v1/studies/{id}/trials, "
                   "/api/v1/studies/{id}/pareto-front, /api/v1/models)")));
}

}  // namespace metaopt::http
