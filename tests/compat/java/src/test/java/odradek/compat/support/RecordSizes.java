package odradek.compat.support;

/**
 * Sizes in the RecordBatch v2 format (Kafka's protocol guide, "Record Batch"), worked out here rather than
 * taken from the client's record classes, which 4.x moved to an internal package.
 */
public final class RecordSizes {
    /** baseOffset .. recordsCount: the batch header before its first record. */
    public static final int BATCH_HEADER = 61;

    private RecordSizes() {
    }

    /** An uncompressed batch of one record with a null key, no headers and a value of {@code valueSize}. */
    public static int batchOfOneValue(int valueSize) {
        int body = 1 // attributes
            + varintSize(0) // timestampDelta
            + varintSize(0) // offsetDelta
            + varintSize(-1) // key length: null
            + varintSize(valueSize) + valueSize
            + varintSize(0); // header count
        return BATCH_HEADER + varintSize(body) + body;
    }

    /** Bytes of a zigzag varint. */
    static int varintSize(long value) {
        long zigzag = (value << 1) ^ (value >> 63);
        int bytes = 1;
        while ((zigzag & ~0x7FL) != 0) {
            zigzag >>>= 7;
            bytes++;
        }
        return bytes;
    }
}
