// The stock quote of seed 002's examples (ScaleOut StateServer's StockQuote, a protobuf
// message there): a ticker, a price and a volume, kept in the store as the text
// "<ticker> <price> <volume>" (baton's objects are bytes; any serialization works).
#pragma once

#include <cstdint>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>

class StockQuote {
public:
    void set_ticker(const std::string& ticker) { ticker_ = ticker; }
    void set_price(float price) { price_ = price; }
    void set_volume(std::int64_t volume) { volume_ = volume; }
    const std::string& ticker() const { return ticker_; }
    float price() const { return price_; }
    std::int64_t volume() const { return volume_; }

    std::string serialize() const {
        std::ostringstream out;
        out << ticker_ << ' ' << std::fixed << std::setprecision(2) << price_ << ' ' << volume_;
        return out.str();
    }

    static StockQuote parse(const std::string& text) {
        StockQuote quote;
        std::istringstream in(text);
        if (!(in >> quote.ticker_ >> quote.price_ >> quote.volume_)) {
            throw std::runtime_error("not a stock quote: " + text);
        }
        return quote;
    }

private:
    std::string ticker_;
    float price_ = 0;
    std::int64_t volume_ = 0;
};
