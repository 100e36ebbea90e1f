// Checks a parsed JSON document against the attntrace.trace/1 schema of docs/json-output.md.
#pragma once

#include "support/catch.hpp"
#include <nlohmann/json.hpp>

namespace schema {

inline void require_string_array(const nlohmann::json& value, std::size_t size) {
    REQUIRE(value.is_array());
    REQUIRE(value.size() == size);
    for (const auto& item : value) REQUIRE(item.is_string());
}

inline void require_trace(const nlohmann::json& doc) {
    REQUIRE(doc.is_object());
    REQUIRE(doc.at("schema") == "attntrace.trace/1");
    REQUIRE(doc.at("mode").is_string());
    REQUIRE(doc.at("dims").is_object());
    for (const auto& [name, value] : doc.at("dims").items()) REQUIRE(value.is_number_unsigned());
    if (doc.at("mode") == "bahdanau") {
        REQUIRE(doc.at("source_tokens").is_array());
        REQUIRE(doc.at("target_tokens").is_array());
    } else {
        REQUIRE(doc.at("tokens").is_array());
        for (const char* d : {"d_in", "d_k", "d_v"}) REQUIRE(doc.at("dims").contains(d));
    }
    REQUIRE(doc.at("notes").is_array());
    REQUIRE(doc.at("positions").is_string());
    REQUIRE(doc.contains("first_position") == (doc.at("positions") != "none"));
    REQUIRE(doc.at("weights").at("source").is_string());
    REQUIRE(doc.at("stages").is_array());
    // The masked and weights stages of causal mode carry the mask.
    if (doc.at("mode") == "causal")
        for (const auto& stage : doc.at("stages"))
            if (stage.at("name") == "masked" || stage.at("name") == "weights") REQUIRE(stage.contains("allowed"));
    for (const auto& stage : doc.at("stages")) {
        INFO(stage.value("name", "?"));
        REQUIRE(stage.at("name").is_string());
        REQUIRE(stage.at("title").is_string());
        REQUIRE(stage.at("formula").is_string());
        REQUIRE(stage.at("applied").is_boolean());
        REQUIRE(stage.contains("reason") == !stage.at("applied").get<bool>());
        const auto rows = stage.at("shape").at(0).get<std::size_t>();
        const auto cols = stage.at("shape").at(1).get<std::size_t>();
        require_string_array(stage.at("rows"), rows);
        require_string_array(stage.at("cols"), cols);
        const auto& data = stage.at("data");
        REQUIRE(data.size() == rows);
        const bool has_mask = stage.contains("allowed");
        const bool masks_scores = stage.at("name") == "masked";
        const bool masks_weights = stage.at("name") == "weights";
        if (has_mask) {
            REQUIRE(stage.at("allowed").size() == rows);
            REQUIRE((masks_scores || masks_weights));
        }
        for (std::size_t r = 0; r < rows; ++r) {
            REQUIRE(data[r].size() == cols);
            for (std::size_t c = 0; c < cols; ++c) {
                const bool hidden = has_mask && stage["allowed"][r][c] == false;
                if (data[r][c].is_null()) {
                    REQUIRE(hidden);  // null only where the mask hides
                } else {
                    REQUIRE(data[r][c].is_number());
                    REQUIRE(!(hidden && masks_scores));     // a hidden score is null
                    if (hidden) REQUIRE(data[r][c] == 0);  // a hidden weight is exactly 0
                }
            }
        }
    }
}

}  // namespace schema
