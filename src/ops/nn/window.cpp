#include "window.h"

#include <algorithm>

#include "kiln/kernels/parallel.h"

namespace kiln::ops::nn {

std::vector<int64_t> spatial_attr(const Node& n, const char* name, size_t rank, int64_t dflt) {
  std::vector<int64_t> v = n.attr_ints(name, {});
  if (v.empty()) return std::vector<int64_t>(rank, dflt);
  KILN_CHECK(v.size() == rank, n.describe(), ": attribute '", name, "' has ", v.size(), " entries, expected ", rank);
  return v;
}

std::vector<int64_t> spatial_sizes(const Shape& s) {
  std::vector<int64_t> r;
  for (size_t i = 2; i < s.rank(); ++i) r.push_back(s[i].is_static() ? s[i].value : -1);
  return r;
}

Window forward_window(const Node& n, const std::vector<int64_t>& in, std::vector<int64_t> kernel, bool ceil_mode,
                      bool has_dilations) {
  size_t r = in.size();
  Window w;
  KILN_CHECK(kernel.size() == r, n.describe(), ": kernel has ", kernel.size(), " spatial dims, input has ", r);
  w.kernel = std::move(kernel);
  w.strides = spatial_attr(n, "strides", r, 1);
  w.dilations = has_dilations ? spatial_attr(n, "dilations", r, 1) : std::vector<int64_t>(r, 1);
  std::vector<int64_t> pads = n.attr_ints("pads", {});
  if (pads.empty()) pads.assign(2 * r, 0);
  KILN_CHECK(pads.size() == 2 * r, n.describe(), ": attribute 'pads' has ", pads.size(), " entries, expected ",
             2 * r);
  for (size_t i = 0; i < r; ++i) {
    KILN_CHECK(w.kernel[i] >= 1 && w.strides[i] >= 1 && w.dilations[i] >= 1, n.describe(),
               ": kernel, strides and dilations must be >= 1");
    KILN_CHECK(pads[i] >= 0 && pads[i + r] >= 0, n.describe(), ": pads must be >= 0");
  }
  std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  w.pad_begin.assign(pads.begin(), pads.begin() + r);
  w.pad_end.assign(pads.begin() + r, pads.end());
  w.out.assign(r, -1);
  for (size_t i = 0; i < r; ++i) {
    int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1, s = w.strides[i];
    if (in[i] < 0) continue;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (in[i] + s - 1) / s;
      int64_t total = std::max<int64_t>((out - 1) * s + eff - in[i], 0);
      int64_t small = total / 2, big = total - small;
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pad_end[i] = auto_pad == "SAME_UPPER" ? big : small;
      w.out[i] = out;
    } else if (auto_pad == "VALID") {
      w.pad_begin[i] = w.pad_end[i] = 0;
      KILN_CHECK(in[i] >= eff, n.describe(), ": window of ", eff, " does not fit input size ", in[i]);
      w.out[i] = (in[i] - eff) / s + 1;
    } else {
      KILN_CHECK(auto_pad == "NOTSET", n.describe(), ": unknown auto_pad '", auto_pad, "'");
      int64_t span = in[i] + w.pad_begin[i] + w.pad_end[i] - eff;
      KILN_CHECK(span >= 0, n.describe(), ": window of ", eff, " does not fit padded input size ",
                 in[i] + w.pad_begin[i] + w.pad_end[i]);
      int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      // A ceil-mode window must start inside the input or its left padding.
      if (ceil_mode && (out - 1) * s >= in[i] + w.pad_begin[i]) --out;
      w.out[i] = out;
    }
  }
  return w;
}

Geom3 to_geom3(const std::vector<int64_t>& in, const Window& w) {
  Geom3 g{};
  size_t r = in.size(), off = 3 - r;
  for (int i = 0; i < 3; ++i) g.in[i] = g.out[i] = g.k[i] = g.s[i] = g.d[i] = 1, g.pb[i] = 0;
  for (size_t i = 0; i < r; ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = w.out[i];
    g.k[off + i] = w.kernel[i];
    g.s[off + i] = w.strides[i];
    g.d[off + i] = w.dilations[i];
    g.pb[off + i] = w.pad_begin[i];
  }
  return g;
}

void valid_range(int64_t base, int64_t s, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = base >= 0 ? 0 : (-base + s - 1) / s;
  hi = base > in - 1 ? 0 : (in - 1 - base) / s + 1;
  lo = std::min(lo, out);
  hi = std::max(lo, std::min(hi, out));
}

template <typename T>
void im2col(const T* x, int64_t channels, const Geom3& g, T* col_all, int threads) {
  const int64_t OS = g.out_size();
  // Channels fill disjoint row blocks of col, so they split across threads (when the
  // copy is big enough to pay for waking them: this runs once per image).
  threads = kernels::threads_for_work(static_cast<double>(channels) * g.k_size() * OS, threads);
  kernels::parallel_for(channels, threads, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      T* col = col_all + c * g.k_size() * OS;
      const T* xc = x + c * g.in_size();
      for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            T* row = col;
            col += OS;
            for (int64_t od = 0; od < g.out[0]; ++od) {
              int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
              for (int64_t oh = 0; oh < g.out[1]; ++oh, row += g.out[2]) {
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                  std::fill(row, row + g.out[2], T(0));
                  continue;
                }
                const T* xr = xc + (id * g.in[1] + ih) * g.in[2];
                int64_t base = kw * g.d[2] - g.pb[2], lo, hi;
                valid_range(base, g.s[2], g.in[2], g.out[2], lo, hi);
                std::fill(row, row + lo, T(0));
                if (g.s[2] == 1) {
                  std::copy(xr + base + lo, xr + base + hi, row + lo);
                } else {
                  for (int64_t ow = lo; ow < hi; ++ow) row[ow] = xr[ow * g.s[2] + base];
                }
                std::fill(row + hi, row + g.out[2], T(0));
              }
            }
          }
    }
  });
}

template <typename T>
void col2im(const T* col, int64_t channels, const Geom3& g, T* y) {
  // Here g describes the forward conv whose input is y and whose output grid is col's.
  const int64_t OS = g.out_size();
  for (int64_t c = 0; c < channels; ++c) {
    T* yc = y + c * g.in_size();
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const T* row = col;
          col += OS;
          for (int64_t od = 0; od < g.out[0]; ++od) {
            int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
            for (int64_t oh = 0; oh < g.out[1]; ++oh, row += g.out[2]) {
              int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
              if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) continue;
              T* yr = yc + (id * g.in[1] + ih) * g.in[2];
              int64_t base = kw * g.d[2] - g.pb[2], lo, hi;
              valid_range(base, g.s[2], g.in[2], g.out[2], lo, hi);
              for (int64_t ow = lo; ow < hi; ++ow) yr[ow * g.s[2] + base] += row[ow];
            }
          }
        }
  }
}

template void im2col<float>(const float*, int64_t, const Geom3&, float*, int);
template void im2col<double>(const double*, int64_t, const Geom3&, double*, int);
template void col2im<float>(const float*, int64_t, const Geom3&, float*);
template void col2im<double>(const double*, int64_t, const Geom3&, double*);

}  // namespace kiln::ops::nn
