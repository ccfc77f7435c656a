// A non-owning reference to a callable, for functions that call it before
// they return (ThreadPool::Run, ParallelFor). Unlike std::function it never
// allocates: a lambda capturing more than two references would otherwise cost a
// heap allocation per call, hundreds of times per decoded token.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace stet {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  // The callable must outlive every call through this reference.
  template <typename F, typename = std::enable_if_t<
                            !std::is_same_v<std::decay_t<F>, FunctionRef> &&
                            std::is_invocable_r_v<R, std::remove_reference_t<F>&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* obj, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace stet
