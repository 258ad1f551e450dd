// `kiln profile --html`: one self-contained page — a roofline plot (SVG, log-log: arithmetic
// intensity against achieved GFLOP/s, the memory roof bandwidth x intensity up to the ridge and
// the compute roof after it, both from the measured machine) and the kernel table. No script,
// no external files. Every kernel is one circle; kernels without FLOPs (data movement) or bytes
// sit on the axis they fall below, drawn hollow.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "graph_report_internal.h"
#include "kiln/analysis/profile.h"

namespace kiln::analysis {

namespace {

constexpr double kW = 760, kH = 460, kLeft = 70, kRight = 30, kTop = 40, kBottom = 55;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

struct LogAxis {
  double lo, hi;  // powers of ten
  double px0, px1;
  double at(double v) const {
    double t = (std::log10(std::clamp(v, std::pow(10, lo), std::pow(10, hi))) - lo) / (hi - lo);
    return px0 + t * (px1 - px0);
  }
};

std::string roofline_svg(const Profile& p) {
  const Roof& r = p.roof;
  double ridge = r.peak_gflops / r.bandwidth_gbs;
  double xmin = ridge / 100, xmax = ridge * 100, ymin = r.peak_gflops / 1e5;
  for (const auto& k : p.kernels) {
    if (k.j.intensity > 0) xmin = std::min(xmin, k.j.intensity), xmax = std::max(xmax, k.j.intensity);
    if (k.j.gflops > 0) ymin = std::min(ymin, k.j.gflops);
  }
  LogAxis x{std::floor(std::log10(xmin)), std::ceil(std::log10(xmax)), kLeft, kW - kRight};
  LogAxis y{std::floor(std::log10(ymin)), std::ceil(std::log10(r.peak_gflops * 2)), kH - kBottom, kTop};
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 " << kW
    << " " << kH << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kW - kLeft - kRight << "\" height=\""
    << kH - kTop - kBottom << "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (double e = x.lo; e <= x.hi; ++e)
    o << "<text x=\"" << x.at(std::pow(10, e)) << "\" y=\"" << kH - kBottom + 15 << "\" text-anchor=\"middle\">1e"
      << e << "</text>\n";
  for (double e = y.lo; e <= y.hi; ++e)
    o << "<text x=\"" << kLeft - 5 << "\" y=\"" << y.at(std::pow(10, e)) + 4 << "\" text-anchor=\"end\">1e" << e
      << "</text>\n";
  o << "<text x=\"" << (kLeft + kW - kRight) / 2 << "\" y=\"" << kH - 15
    << "\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n";
  o << "<text transform=\"rotate(-90)\" x=\"" << -(kTop + kH - kBottom) / 2 << "\" y=\"18\" text-anchor=\"middle\">"
    << "achieved GFLOP/s</text>\n";
  // The two roofs: bandwidth x intensity up to the ridge, the FMA peak after it.
  double x0 = std::pow(10, x.lo), x1 = std::pow(10, x.hi);
  o << "<polyline class=\"roof\" fill=\"none\" stroke=\"#000\" stroke-width=\"2\" points=\"" << x.at(x0) << ","
    << y.at(r.bandwidth_gbs * x0) << " " << x.at(ridge) << "," << y.at(r.peak_gflops) << " " << x.at(x1) << ","
    << y.at(r.peak_gflops) << "\"/>\n";
  o << "<text x=\"" << x.at(ridge) + 6 << "\" y=\"" << y.at(r.peak_gflops) - 6 << "\">" << num(r.peak_gflops)
    << " GFLOP/s (FP32 FMA, measured)</text>\n";
  o << "<text x=\"" << x.at(x0) + 6 << "\" y=\"" << y.at(r.bandwidth_gbs * x0) - 8 << "\">" << num(r.bandwidth_gbs)
    << " GB/s (triad, measured)</text>\n";
  for (const auto& k : p.kernels) {
    bool on_axis = k.j.intensity <= 0 || k.j.gflops <= 0;
    double radius = 3 + 9 * std::sqrt(std::max(k.share, 0.0));
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.4f ms, %.1f%%, %.3g FLOP/B, %.3g GFLOP/s, %.0f%% of roof, %s", k.ms, 100 * k.share,
                  k.j.intensity, k.j.gflops, 100 * k.j.roof_fraction, std::string(bound_name(k.j.verdict)).c_str());
    o << "<circle class=\"kernel\" cx=\"" << x.at(k.j.intensity > 0 ? k.j.intensity : x0) << "\" cy=\""
      << y.at(k.j.gflops > 0 ? k.j.gflops : std::pow(10, y.lo)) << "\" r=\"" << radius << "\" fill=\""
      << (on_axis ? "none" : bound_colour(k.j.verdict)) << "\" fill-opacity=\"0.6\" stroke=\"" << bound_colour(k.j.verdict)
      << "\"><title>" << xml_escape(k.name) << " (" << xml_escape(k.op) << "): " << buf << "</title></circle>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace

std::string profile_to_html(const Profile& p) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kiln profile: " << xml_escape(p.model) << "</title>\n"
    << "<style>body{font-family:sans-serif;margin:20px}table{border-collapse:collapse;font-size:12px}"
       "td,th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}"
       ".compute{color:#d62728}.memory{color:#1f77b4}.overhead{color:#7f7f7f}</style></head><body>\n";
  char buf[512];
  o << "<h1>kiln profile: " << xml_escape(p.model) << "</h1>\n";
  std::snprintf(buf, sizeof buf,
                "<p>%d threads, median of %d runs. Roof: %.1f GFLOP/s, %.1f GB/s (kiln machine: %s); dispatch %.1f us "
                "per kernel. Kernels %.3f ms summed; plain run %.3f ms, profiled %.3f ms (profiler overhead %+.1f%%).</p>\n",
                p.threads, p.runs, p.roof.peak_gflops, p.roof.bandwidth_gbs, xml_escape(p.machine).c_str(), p.roof.dispatch_us,
                p.kernel_ms, p.plain_ms, p.profiled_ms, 100 * p.overhead_fraction);
  o << buf;
  o << "<p>Each circle is a kernel (area ~ share of time): <span class=\"compute\">compute-bound</span>, "
       "<span class=\"memory\">memory-bound</span>, <span class=\"overhead\">overhead-bound</span>; hollow: no "
       "FLOPs or no bytes, drawn on the axis.</p>\n";
  o << roofline_svg(p);
  o << "<h2>Kernels</h2>\n<table>\n<tr><th class=\"l\">kernel</th><th class=\"l\">op</th><th class=\"l\">tactic</th>"
       "<th>ms</th><th>share</th><th>MFLOP</th><th>KiB</th><th>FLOP/B</th><th>GFLOP/s</th><th>GB/s</th>"
       "<th>roof</th><th class=\"l\">verdict</th><th class=\"l\">onnx nodes</th></tr>\n";
  std::vector<const KernelProfile*> sorted;
  for (const auto& k : p.kernels) sorted.push_back(&k);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->ms > b->ms; });
  for (const KernelProfile* k : sorted) {
    std::string nodes;
    for (const auto& n : k->nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    std::string verdict(bound_name(k->j.verdict));
    std::snprintf(buf, sizeof buf,
                  "<td>%.4f</td><td>%.1f%%</td><td>%.3f</td><td>%.1f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                  "<td>%.0f%%</td>",
                  k->ms, 100 * k->share, k->flops / 1e6, k->bytes / 1024, k->j.intensity, k->j.gflops, k->j.gbs,
                  100 * k->j.roof_fraction);
    o << "<tr><td class=\"l\">" << xml_escape(k->name) << "</td><td class=\"l\">" << xml_escape(k->op)
      << (k->fast ? "" : " (reference)") << "</td><td class=\"l\">" << xml_escape(k->tactic) << "</td>" << buf
      << "<td class=\"l " << verdict << "\">" << verdict << "</td><td class=\"l\">" << xml_escape(nodes) << "</td></tr>\n";
  }
  o << "</table>\n<h2>Suggestions</h2>\n<ul>\n";
  for (const auto& s : p.suggestions) o << "<li><b>" << xml_escape(s.kind) << "</b>: " << xml_escape(s.detail) << "</li>\n";
  if (p.suggestions.empty()) o << "<li>none</li>\n";
  o << "</ul>\n</body></html>\n";
  return o.str();
}

}  // namespace kiln::analysis
