// Pieces of the artifact format used by both the writer and the reader.
#include "artifact_format.h"

namespace kiln::runtime::format {
namespace {

void collect(Graph& g, std::vector<StoredTensor>& out) {
  for (Value* v : g.initializers) out.push_back(StoredTensor{"init:" + v->name, v, nullptr, ""});
  for (const auto& np : g.nodes()) {
    Node& n = *np;
    for (auto& [name, a] : n.attrs) {
      if (a.kind() == AttrKind::Tensor) out.push_back(StoredTensor{"attr:" + n.name + ":" + name, nullptr, &n, name});
      if (a.kind() == AttrKind::Graph && a.g()) collect(*a.g(), out);
    }
  }
}

}  // namespace

const Tensor& StoredTensor::tensor() const {
  return value ? *value->initializer : node->attrs.at(attr).t();
}

void StoredTensor::replace(Tensor t) const {
  if (value) value->initializer = std::move(t);
  else node->attrs[attr] = Attribute(std::move(t));
}

std::vector<StoredTensor> stored_tensors(Graph& g) {
  std::vector<StoredTensor> out;
  collect(g, out);
  return out;
}

json::Value manifest_to_json(const ArtifactManifest& m) {
  json::Value j;
  j.set("kiln_version", m.kiln_version);
  j.set("format_version", m.format_version);
  j.set("source_model", m.source_model);
  j.set("source_sha256", m.source_sha256);
  j.set("target_isa", m.target_isa);
  json::Array passes;
  for (const auto& p : m.passes) passes.emplace_back(p);
  j.set("passes", std::move(passes));
  json::Value dims{json::Object{}};
  for (const auto& [k, v] : m.dims) dims.set(k, v);
  j.set("dims", std::move(dims));
  j.set("threads", m.threads);
  j.set("compile_key", m.compile_key);
  return j;
}

ArtifactManifest manifest_from_json(const json::Value& j, const std::string& what) {
  ArtifactManifest m;
  auto field = [&](const char* key) -> const json::Value& { return j.at(key, what); };
  auto name = [&](const char* key) { return what + ": " + key; };
  m.kiln_version = field("kiln_version").as_string(name("kiln_version"));
  m.format_version = field("format_version").as_int(name("format_version"));
  m.source_model = field("source_model").as_string(name("source_model"));
  m.source_sha256 = field("source_sha256").as_string(name("source_sha256"));
  m.target_isa = field("target_isa").as_string(name("target_isa"));
  for (const json::Value& p : field("passes").as_array(name("passes"))) m.passes.push_back(p.as_string(name("passes")));
  for (const auto& [k, v] : field("dims").as_object(name("dims"))) m.dims[k] = v.as_string(name("dims"));
  if (const json::Value* t = j.find("threads")) m.threads = t->as_int(name("threads"));
  if (const json::Value* k = j.find("compile_key")) m.compile_key = k->as_string(name("compile_key"));
  return m;
}

}  // namespace kiln::runtime::format
