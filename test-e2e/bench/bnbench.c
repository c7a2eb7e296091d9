/*
 * The benchmark's C side: the raw-syscall baseline for figure (a), and two setup tools that would be slow
 * as commands (3,000 mounts for figure (b); 1,000 loop devices for figure (d)).
 *
 *   bnbench rawbind SRC TARGET N WARMUP [mkdir]
 *       N times: mount(SRC, TARGET, MS_BIND) + umount2(TARGET, UMOUNT_NOFOLLOW); with "mkdir", TARGET is
 *       created before and removed after each pair (what the plugin also does). Prints the nanoseconds of
 *       each pair after the first WARMUP, one per line.
 *   bnbench clutter-mount DIR N      N small tmpfs mounts at DIR/c00000 ... (the directories are created)
 *   bnbench clutter-umount DIR N     takes them off again and removes the directories (missing ones: skipped)
 *   bnbench loop-attach FILE...      one loop device per file (LOOP_CTL_GET_FREE + LOOP_CONFIGURE); prints
 *                                    the device paths in order
 *   bnbench loop-detach DEV...       LOOP_CLR_FD on each
 *
 * Exit status 0 on success; on the first failure, a message on stderr and 1 (what was done stays done:
 * the caller's cleanup trap takes it off).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fail(const char *what, const char *path) {
    fprintf(stderr, "bnbench: %s %s: %s\n", what, path, strerror(errno));
    return 1;
}

static int rawbind(const char *src, const char *target, long n, long warmup, int with_mkdir) {
    long long *times = malloc(sizeof(long long) * (size_t) n);
    if (times == NULL) {
        return fail("malloc", "");
    }
    for (long i = 0; i < n + warmup; i++) {
        long long start = now_ns();
        if (with_mkdir && mkdir(target, 0750) != 0) {
            return fail("mkdir", target);
        }
        if (mount(src, target, NULL, MS_BIND, NULL) != 0) {
            return fail("mount", target);
        }
        if (umount2(target, UMOUNT_NOFOLLOW) != 0) {
            return fail("umount2", target);
        }
        if (with_mkdir && rmdir(target) != 0) {
            return fail("rmdir", target);
        }
        if (i >= warmup) {
            times[i - warmup] = now_ns() - start;
        }
    }
    for (long i = 0; i < n; i++) {
        printf("%lld\n", times[i]);
    }
    free(times);
    return 0;
}

static int clutter(const char *dir, long n, int mounting) {
    char path[4096];
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/c%05ld", dir, i);
        if (mounting) {
            if (mkdir(path, 0700) != 0 && errno != EEXIST) {
                return fail("mkdir", path);
            }
            if (mount("bench-clutter", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=700") != 0) {
                return fail("mount", path);
            }
        } else {
            if (umount2(path, UMOUNT_NOFOLLOW) != 0 && errno != EINVAL && errno != ENOENT) {
                return fail("umount2", path);
            }
            if (rmdir(path) != 0 && errno != ENOENT) {
                return fail("rmdir", path);
            }
        }
    }
    return 0;
}

static int loop_attach(int count, char **files) {
    int control = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0) {
        return fail("open", "/dev/loop-control");
    }
    for (int i = 0; i < count; i++) {
        int file = open(files[i], O_RDWR | O_CLOEXEC);
        if (file < 0) {
            return fail("open", files[i]);
        }
        for (int attempt = 0;; attempt++) {
            int number = ioctl(control, LOOP_CTL_GET_FREE);
            if (number < 0) {
                return fail("LOOP_CTL_GET_FREE for", files[i]);
            }
            char device[64];
            snprintf(device, sizeof device, "/dev/loop%d", number);
            int loop = open(device, O_RDWR | O_CLOEXEC);
            if (loop < 0) {
                return fail("open", device);
            }
            struct loop_config config;
            memset(&config, 0, sizeof config);
            config.fd = (unsigned int) file;
            strncpy((char *) config.info.lo_file_name, files[i], LO_NAME_SIZE - 1);
            int rc = ioctl(loop, LOOP_CONFIGURE, &config);
            int err = errno;
            close(loop);
            if (rc == 0) {
                printf("%s\n", device);
                break;
            }
            errno = err;
            if (err != EBUSY || attempt >= 20) {
                return fail("LOOP_CONFIGURE", device); /* EBUSY: another process took it first; retry */
            }
        }
        close(file);
    }
    close(control);
    return 0;
}

static int loop_detach(int count, char **devices) {
    int status = 0;
    for (int i = 0; i < count; i++) {
        int loop = open(devices[i], O_RDWR | O_CLOEXEC);
        if (loop < 0 || ioctl(loop, LOOP_CLR_FD, 0) != 0) {
            status = fail("LOOP_CLR_FD", devices[i]);
        }
        if (loop >= 0) {
            close(loop);
        }
    }
    return status;
}

int main(int argc, char **argv) {
    if (argc >= 6 && strcmp(argv[1], "rawbind") == 0) {
        int with_mkdir = argc >= 7 && strcmp(argv[6], "mkdir") == 0;
        return rawbind(argv[2], argv[3], atol(argv[4]), atol(argv[5]), with_mkdir);
    }
    if (argc == 4 && strcmp(argv[1], "clutter-mount") == 0) {
        return clutter(argv[2], atol(argv[3]), 1);
    }
    if (argc == 4 && strcmp(argv[1], "clutter-umount") == 0) {
        return clutter(argv[2], atol(argv[3]), 0);
    }
    if (argc >= 2 && strcmp(argv[1], "loop-attach") == 0) {
        return loop_attach(argc - 2, argv + 2);
    }
    if (argc >= 2 && strcmp(argv[1], "loop-detach") == 0) {
        return loop_detach(argc - 2, argv + 2);
    }
    fprintf(stderr, "usage: bnbench rawbind SRC TARGET N WARMUP [mkdir] | clutter-mount DIR N | "
                    "clutter-umount DIR N | loop-attach FILE... | loop-detach DEV...\n");
    return 2;
}
