#include "distributed/key_slot.hpp"

#include "distributed/lock_keys.hpp"

namespace locklab::redis {

std::uint16_t crc16_xmodem(std::string_view bytes) noexcept {
  std::uint16_t crc = 0;
  for (const char ch : bytes) {
    crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(ch) << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

int key_slot(std::string_view key) noexcept {
  const auto tag = hash_tag(key);
  return crc16_xmodem(tag ? *tag : key) % kClusterSlots;
}

}  // namespace locklab::redis
