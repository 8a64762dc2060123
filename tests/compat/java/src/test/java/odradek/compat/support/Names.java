package odradek.compat.support;

import java.util.UUID;

/** Topic, group and transactional ids no other test (nor the other client line's run) uses. */
public final class Names {
    private Names() {
    }

    public static String unique(String what) {
        return "java" + Target.clientMajor() + "-" + what + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
}
