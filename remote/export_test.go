package remote

// Cksum is cksum, for the tests: the CRC the host's cksum prints.
var Cksum = cksum
