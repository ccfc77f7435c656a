// Placeholder until the PostgreSQL backend lands.
#include "forensics/exchange_store.h"

namespace stet::forensics {

Result<std::unique_ptr<ExchangeStore>> OpenPostgresExchangeStore(const std::string& url,
                                                                 ExchangeStore::Mode) {
  return Unimplemented("PostgreSQL stores are not built in (" + MaskUrlPassword(url) + ")");
}

}  // namespace stet::forensics
