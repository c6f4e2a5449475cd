// Package keyslot computes a Redis Cluster hash slot, as CLUSTER KEYSLOT
// does, for redisstore (which groups a call's keys by slot) and the test
// cluster of internal/redistest.
package keyslot

import "strings"

// Count is how many hash slots a Redis Cluster has.
const Count = 16384

// Of returns the hash slot of the Redis key key: CRC16 (XMODEM) of the key
// modulo Count, where a non-empty {hash tag} (the bytes between the first
// '{' and the first '}' after it) stands for the whole key, so that
// "{user:1}:a" and "{user:1}:b" share a slot.
func Of(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % Count
}
