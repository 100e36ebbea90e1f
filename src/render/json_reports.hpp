#pragma once

#include "attention/compare.hpp"
#include "attention/similarity.hpp"

#include <ostream>
#include <string>

namespace attntrace {

void render_similarity_json(const SimilarityTables& tables, const std::string& origin,
                            const std::string& description, std::ostream& out);
void render_comparison_json(const Comparison& comparison, std::ostream& out);

}  // namespace attntrace
