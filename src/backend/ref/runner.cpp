// RefRunner: BaseRunner over a reference Session.
#include "polygraphy/backend/ref/runner.h"

#include "polygraphy/common/logger.h"

namespace polygraphy::ref {

RefRunner::RefRunner(Loader<std::shared_ptr<Session>> session, std::optional<std::string> name)
    : BaseRunner("ref-runner", std::move(name)), session_loader_(std::move(session)) {}

void RefRunner::activate_impl() {
    if (!session_loader_) throw PolygraphyException("RefRunner has no session loader");
    std::shared_ptr<Session> session = session_loader_();
    if (!session) throw PolygraphyException("RefRunner: the session loader returned no session");
    session_ = std::move(session);
}

void RefRunner::deactivate_impl() {
    if (session_) {
        if (const std::optional<SessionProfile> profile = session_->profile())
            logger().info(name() + ": " + format_profile(*profile));
    }
    session_.reset();
}

TensorMetadata RefRunner::get_input_metadata_impl() {
    if (!session_) throw PolygraphyException("RefRunner is not active: call activate() first");
    return session_->input_metadata();
}

TensorMap RefRunner::infer_impl(const TensorMap& feed) {
    if (!session_) throw PolygraphyException("RefRunner is not active: call activate() first");
    return session_->run(feed);
}

}  // namespace polygraphy::ref
