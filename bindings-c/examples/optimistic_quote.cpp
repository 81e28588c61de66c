// Seed 002's optimistic example (ScaleOut StateServer's "Optimistic Locking"), ported to baton
// with only the names changed: get the quote and its version, change it, update it only if
// nobody wrote it since; on a version mismatch retry the whole sequence, and when the quote is
// gone insert it. It runs the loop twice from no quote: the first inserts, the second updates.
//
//   optimistic_quote [STORE_URL] [TICKER]    (default: sqlite:///tmp/baton-example.db GOOG)
#include <baton.hpp>

#include <chrono>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "quote.hpp"

namespace {

void update_quote(const baton::Locker& quote_cache, const std::string& ticker) {
    const int max_update_attempts = 100;
    int update_attempts = 0;
    bool quote_updated = false;

    do
    {
      if (update_attempts > max_update_attempts)
        throw std::runtime_error("Max optimistic update attempts exceeded.");

      update_attempts++;

      try
      {
        // Retrieve the quote and change its price. The returned Versioned contains the
        // version number of the object in the store, which will be used later for the update
        // (baton's get gives no value, rather than an exception, when there is no object):
        auto get_result = quote_cache.get(ticker);
        if (!get_result)
          throw baton::ObjectNotFound(ticker + " is not in the store");

        std::cout << get_result->version << std::endl;

        auto quote = StockQuote::parse(get_result->value_string());
        quote.set_price(1052.42f);

        // Perform optimistic update:
        auto update_result = quote_cache.update_optimistic(ticker, quote.serialize(), get_result->version);

        // If we get this far without throwing an exception then the update succeeded:
        quote_updated = true;

        // Note that the update result is the object's new version, which could be
        // used for a subsequent optimistic update to our local quote object:
        std::cout << update_result << std::endl;
      }
      catch (const baton::VersionMismatch&)
      {
        // A collision occurred because another client/thread updated the object in the
        // period between our get() and our update_optimistic() calls. We don't want
        // to overwrite the other thread's changes, so we fall through and allow
        // the do..while loop to retry the entire get/update_optimistic sequence.
      }
      catch (const baton::Busy&)
      {
        // Another client holds the quote's lock (get_and_lock): baton's unlocked writes
        // leave a locked object alone. Wait a little, then retry the whole sequence.
        std::this_thread::sleep_for(std::chrono::milliseconds(10 * update_attempts));
      }
      catch (const baton::ObjectNotFound&)
      {
        // Another client or thread must have removed our object.
        // Attempt to recreate it with our desired value.
        StockQuote quote;
        quote.set_ticker(ticker);
        quote.set_price(1052.42f);
        quote.set_volume(-1);
        try
        {
          quote_cache.insert(ticker, quote.serialize());

          quote_updated = true;
        }
        catch (const baton::AlreadyExists&)
        {
          // Another client recreated it first: retry the entire sequence.
        }
      }

    } while (!quote_updated);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string url = argc > 1 ? argv[1] : "sqlite:///tmp/baton-example.db";
    const std::string ticker = argc > 2 ? argv[2] : "GOOG";
    try {
        // The seed's NamedProtobufCache<StockQuote> quote_cache("Stock Quotes"): the store.
        baton::Locker quote_cache(url);
        try {
            quote_cache.remove(ticker);  // start from no quote: the first loop inserts it
        } catch (const baton::ObjectNotFound&) {
        }
        update_quote(quote_cache, ticker);  // inserts
        update_quote(quote_cache, ticker);  // updates
        auto now = quote_cache.get(ticker);
        if (!now || StockQuote::parse(now->value_string()).price() != 1052.42f) {
            std::cerr << "the quote was not updated\n";
            return 1;
        }
        std::cout << ticker << " is " << now->value_string() << " at version " << now->version
                  << "\n";
        return 0;
    } catch (const baton::Error& e) {
        std::cerr << "baton: " << e.what() << " (" << baton::kind_name(e.kind()) << ")\n";
        return 1;
    }
}
