// `kiln perf --svg`: latency (left axis) and throughput (right axis) against batch on a
// log2 axis; each point coloured by what bounds it. Plain SVG, no script, no fonts needed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "kiln/analysis/perf_model.h"

namespace kiln::analysis {

namespace {

constexpr double kW = 720, kH = 420, kLeft = 80, kRight = 80, kTop = 50, kBottom = 60;

// A "nice" axis top: 1, 2 or 5 times a power of ten at or above v.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

std::string num(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string perf_to_svg(const PerfReport& r) {
  std::vector<const PerfRow*> rows;
  for (const auto& row : r.rows) rows.push_back(&row);
  std::sort(rows.begin(), rows.end(), [](const PerfRow* a, const PerfRow* b) { return a->batch < b->batch; });
  double lo = std::log2(static_cast<double>(rows.front()->batch)), hi = std::log2(static_cast<double>(rows.back()->batch));
  if (hi - lo < 1) hi = lo + 1;
  double max_lat = 0, max_thr = 0;
  for (const PerfRow* row : rows) {
    max_lat = std::max(max_lat, row->latency_ms);
    max_thr = std::max(max_thr, row->throughput_per_s);
  }
  max_lat = nice_ceiling(max_lat);
  max_thr = nice_ceiling(max_thr);
  double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto x = [&](int64_t b) { return kLeft + (std::log2(static_cast<double>(b)) - lo) / (hi - lo) * pw; };
  auto y_lat = [&](double v) { return kTop + ph - v / max_lat * ph; };
  auto y_thr = [&](double v) { return kTop + ph - v / max_thr * ph; };

  std::ostringstream o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n",
                kW, kH, kW, kH);
  o << buf << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << kW / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">"
    << xml_escape(r.model + " on " + r.chip.name + ", " + std::string(precision_name(r.precision))) << "</text>\n";
  // Frame, gridlines and ticks.
  std::snprintf(buf, sizeof buf, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n",
                kLeft, kTop, pw, ph);
  o << buf;
  for (int i = 0; i <= 4; ++i) {
    double f = i / 4.0, yy = kTop + ph - f * ph;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#b35900\">%s</text>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\" fill=\"#2ca02c\">%s</text>\n",
                  kLeft, yy, kLeft + pw, yy, kLeft - 6, yy + 4, num(f * max_lat).c_str(), kLeft + pw + 6, yy + 4,
                  num(f * max_thr).c_str());
    o << buf;
  }
  for (const PerfRow* row : rows) {
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>\n", x(row->batch),
                  kTop + ph + 18, static_cast<long long>(row->batch));
    o << buf;
  }
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 22 << "\" text-anchor=\"middle\">batch (log scale)</text>\n";
  std::snprintf(buf, sizeof buf,
                "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"#b35900\">latency (ms)</text>\n"
                "<text transform=\"translate(%.1f,%.1f) rotate(90)\" text-anchor=\"middle\" fill=\"#2ca02c\">throughput (/s)</text>\n",
                kTop + ph / 2, kW - 18, kTop + ph / 2);
  o << buf;
  // The two curves.
  auto polyline = [&](auto y, const char* colour, const char* dash) {
    o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"" << dash << " points=\"";
    for (const PerfRow* row : rows) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(row->batch), y(*row));
      o << buf;
    }
    o << "\"/>\n";
  };
  polyline([&](const PerfRow& row) { return y_lat(row.latency_ms); }, "#b35900", "");
  polyline([&](const PerfRow& row) { return y_thr(row.throughput_per_s); }, "#2ca02c", " stroke-dasharray=\"6,4\"");
  for (const PerfRow* row : rows) {
    for (double yy : {y_lat(row->latency_ms), y_thr(row->throughput_per_s)}) {
      std::snprintf(buf, sizeof buf, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"%s><title>batch %lld: %.4g ms, %.4g/s, %s-bound</title></circle>\n",
                    x(row->batch), yy, bound_colour(row->bound), row->fits ? "" : " fill-opacity=\"0.3\"",
                    static_cast<long long>(row->batch), row->latency_ms, row->throughput_per_s,
                    std::string(bound_name(row->bound)).c_str());
      o << buf;
    }
  }
  // Legend.
  double ly = kTop + 8;
  for (Bound b : {Bound::compute, Bound::memory, Bound::overhead}) {
    std::snprintf(buf, sizeof buf,
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s-bound</text>\n",
                  kLeft + 12, ly, bound_colour(b), kLeft + 20, ly + 4, std::string(bound_name(b)).c_str());
    o << buf;
    ly += 16;
  }
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b35900\" stroke-width=\"2\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">latency</text>\n"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#2ca02c\" stroke-width=\"2\" stroke-dasharray=\"6,4\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">throughput</text>\n",
                kLeft + 4, ly, kLeft + 18, ly, kLeft + 20, ly + 4, kLeft + 4, ly + 16, kLeft + 18, ly + 16, kLeft + 20, ly + 20);
  o << buf << "</svg>\n";
  return o.str();
}

}  // namespace kiln::analysis
