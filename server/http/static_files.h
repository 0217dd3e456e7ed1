// The dashboard's files (index.html and its bundle), served from a directory.
#ifndef METAOPT_SERVER_HTTP_STATIC_FILES_H_
#define METAOPT_SERVER_HTTP_STATIC_FILES_H_

#include <string>

#include "server/http/http_listener.h"

namespace metaopt::http {

// Answers GET and HEAD for the files under one directory: "/" is index.html;
// a path with a ".." or "." segment, a hidden file or a directory is 404.
// Content types by extension; every response carries a Content-Security-Policy
// that allows only this origin (nothing is fetched from elsewhere). When the
// directory does not exist every path is 404 saying how to build the
// dashboard. Thread-safe (immutable; files are read per request).
class StaticFiles {
 public:
  explicit StaticFiles(std::string root) : root_(std::move(root)) {}

  HttpResponse Serve(const HttpRequest& request) const;

 private:
  const std::string root_;
};

}  // namespace metaopt::http

#endif  // METAOPT_SERVER_HTTP_STATIC_FILES_H_
