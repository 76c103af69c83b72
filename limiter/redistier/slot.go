package redistier

import "strings"

// slots is the number of Redis Cluster hash slots.
const slots = 16384

// crc16tab is the table of CRC16-CCITT (XMODEM: polynomial 0x1021, initial
// value 0), the checksum of Redis Cluster's key hash.
var crc16tab = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for b := 0; b < 8; b++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// slot returns the Redis Cluster hash slot of key: CRC16 of the key, or of
// its hash tag (the text between its first "{" and the next "}", when not
// empty), modulo 16384.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^key[i]]
	}
	return int(crc) % slots
}
