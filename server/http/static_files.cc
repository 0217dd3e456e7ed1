#include "server/http/static_files.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace metaopt::http {
namespace {

const char* ContentTypeOf(const std::string& path) {
  struct Type {
    const char* extension;
    const char* type;
  };
  static constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".map", "application/json; charset=utf-8"},
  };
  for (const Type& type : kTypes) {
    if (absl::EndsWith(path, type.extension)) return type.type;
  }
  return "application/octet-stream";
}

bool IsSafePath(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  for (absl::string_view segment :
       absl::StrSplit(absl::string_view(path).substr(1), '/')) {
    if (segment.empty() || segment[0] == '.') return false;
  }
  return true;
}

bool IsRegularFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace

HttpResponse StaticFiles::Serve(const HttpRequest& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse response =
        TextResponse(405, absl::StrCat("method ", request.method.substr(0, 16),
                                       " not allowed: use GET"));
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  const std::string path =
      request.path == "/" ? std::string("/index.html") : request.path;
  if (!IsSafePath(path)) return TextResponse(404, "not found");
  const std::string file = root_ + path;
  if (!IsRegularFile(file)) {
    if (!IsRegularFile(root_ + "/index.html")) {
      return TextResponse(
          404, absl::StrCat("the dashboard is not built (no ", root_,
                            "/index.html): scripts/build.sh builds it with "
                            "npm; the API is at /api/v1/"));
    }
    return TextResponse(404, "not found");
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return TextResponse(500, absl::StrCat("cannot read ", path));
  }
  HttpResponse response;
  response.content_type = ContentTypeOf(path);
  response.body = std::move(content).str();
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back(
      "Content-Security-Policy",
      "default-src 'self'; style-src 'self' 'unsafe-inline'; "
      "img-src 'self' data:; frame-ancestors 'none'");
  return response;
}

}  // namespace metaopt::http
