// Row and column labels, shared rather than copied: every stage of a trace labels its rows
// (and most their columns) with the same tokens, and a copy per stage would multiply the
// memory of long labels by the number of stages.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace attntrace {

class Labels {
public:
    Labels() : items_(std::make_shared<const std::vector<std::string>>()) {}
    Labels(std::vector<std::string> items)  // NOLINT: a list of strings is a list of labels
        : items_(std::make_shared<const std::vector<std::string>>(std::move(items))) {}
    Labels(std::initializer_list<std::string> items) : Labels(std::vector<std::string>(items)) {}

    std::size_t size() const { return items_->size(); }
    bool empty() const { return items_->empty(); }
    const std::string& operator[](std::size_t i) const { return (*items_)[i]; }
    const std::string& front() const { return items_->front(); }
    const std::string& back() const { return items_->back(); }
    auto begin() const { return items_->begin(); }
    auto end() const { return items_->end(); }
    const std::vector<std::string>& list() const { return *items_; }
    operator const std::vector<std::string>&() const { return *items_; }  // NOLINT

    // The bytes of all the labels' text, once.
    std::size_t text_bytes() const {
        std::size_t bytes = 0;
        for (const auto& label : *items_) bytes += label.size();
        return bytes;
    }

    friend bool operator==(const Labels& a, const Labels& b) { return a.items_ == b.items_ || *a.items_ == *b.items_; }
    friend bool operator==(const Labels& a, const std::vector<std::string>& b) { return *a.items_ == b; }

private:
    std::shared_ptr<const std::vector<std::string>> items_;
};

}  // namespace attntrace
