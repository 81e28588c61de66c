// Seed 002's pessimistic example (ScaleOut StateServer's "Locking Objects"), ported to baton
// with only the names changed: read and lock the quote, change it, then update it and release
// the lock in one step. baton::Object is the lock ticket: its destructor releases the lock if
// the update never ran (an exception, an early return).
//
//   stock_quote [STORE_URL] [TICKER]    (default: sqlite:///tmp/baton-example.db GOOG)
#include <baton.hpp>

#include <iostream>
#include <string>

#include "quote.hpp"

int main(int argc, char** argv) {
    const std::string url = argc > 1 ? argv[1] : "sqlite:///tmp/baton-example.db";
    const std::string ticker = argc > 2 ? argv[2] : "GOOG";
    try {
        // The seed's NamedProtobufCache<StockQuote> quote_cache("Stock Quotes"): the store.
        baton::Locker quote_cache(url);

        // The quote to change (the seed's cache holds it already).
        StockQuote first;
        first.set_ticker(ticker);
        first.set_price(1053.00f);
        first.set_volume(1500000);
        try {
            quote_cache.insert(ticker, first.serialize());
        } catch (const baton::AlreadyExists&) {
        }

        // Read & lock the object in the store:
        auto get_result = quote_cache.get_and_lock(ticker);

        // Change the retrieved object's state to contain the latest info:
        auto quote = StockQuote::parse(get_result.value_string());
        quote.set_price(1053.26f);
        quote.set_volume(1657662);

        // Atomically update & unlock the object in the store. The update goes through the
        // baton::Object returned by the earlier locking get (the lock ticket), and the store
        // applies it only while that lock is held, or else baton::Lost is thrown and nothing
        // is written:
        auto version = get_result.update_locked_and_release(quote.serialize());

        auto now = quote_cache.get(ticker);
        std::cout << ticker << " is " << (now ? now->value_string() : "gone") << " at version "
                  << version << " (fencing token " << get_result.token() << ")\n";
        return now && now->version >= version ? 0 : 1;
    } catch (const baton::Error& e) {
        std::cerr << "baton: " << e.what() << " (" << baton::kind_name(e.kind()) << ")\n";
        return 1;
    }
}
