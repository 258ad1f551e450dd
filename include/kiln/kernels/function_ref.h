// A non-owning reference to a callable: a pointer to it and a call thunk. Unlike std::function
// it never allocates (std::function puts a lambda that captures more than two references on the
// heap), so the kernels can take callbacks on every run without touching the allocator. The
// callable must outlive the FunctionRef: pass a lambda straight to the call that takes it.
#pragma once
#include <type_traits>
#include <utility>

namespace kiln::kernels {

template <class Sig>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  FunctionRef() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit on purpose, like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }
  explicit operator bool() const { return call_ != nullptr; }

 private:
  void* obj_ = nullptr;
  R (*call_)(void*, Args...) = nullptr;
};

}  // namespace kiln::kernels
