/* SPDX-License-Identifier: MIT */
/*
 * serve.c - the program's open of a path (HOP_OPEN), with the kernel's
 * semantics (O_CREAT, O_EXCL, O_TRUNC, O_NOFOLLOW, permissions), served
 * by the holder when it can be.
 *
 * The file is found with an O_PATH open, which breaks no lease: a file
 * already served gets one more OFD on its one description, never a new
 * description (which would break the holder's own lease). A file not yet
 * served gets the holder's description (O_RDWR|O_DIRECT, O_RDONLY when it
 * cannot be written), a write lease and a wtio handle; an inode being set
 * up, demoted or closed makes the other opens of it wait (table.c). What
 * the holder cannot serve it answers HSERVE_NOT_SERVED before changing
 * anything, and the client's own open then gives the kernel's answer; a
 * file the holder has created itself is never answered that way (the
 * client's O_EXCL would then fail): it gets an OFD demoted from birth.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "fds.h"
#include "lease.h"
#include "log.h"
#include "record.h"
#include "serve.h"
#include "shm.h"
#include "who.h"

/* How long after the holder's last close of a file (or its creation) a
 * refused lease is taken for that close's leftovers, and tried again
 * (every millisecond). */
#define RECENT_MS 1000

/* What an OFD keeps of the program's open flags (F_GETFL shows them). */
#define OFD_FLAGS (O_ACCMODE | O_APPEND | O_NONBLOCK | O_NOATIME | O_DIRECT | \
		   O_DSYNC | O_SYNC)

static int not_served(const char *path, const char *why, bool elsewhere)
{
	HSTAT_INC(opens_not_served);
	if (elsewhere)
		HSTAT_INC(not_served_elsewhere);
	else
		HSTAT_INC(not_served_other);
	hdebug("%s: not served: %s", path, why);
	return HSERVE_NOT_SERVED;
}

/* The program's permission to open the file found (its credentials are
 * the holder's: do_open serves no other sender, creds.c): 0 or -errno,
 * as open(2) would answer. */
static int may_open(int pfd, const struct stat *st, int flags)
{
	int acc = flags & O_ACCMODE, mask = 0;

	if (acc != O_WRONLY)
		mask |= R_OK;
	if (acc != O_RDONLY || (flags & O_TRUNC))
		mask |= W_OK;
	if (syscall(SYS_faccessat2, pfd, "", mask, AT_EMPTY_PATH | AT_EACCESS))
		return -errno;
	if ((flags & O_NOATIME) && st->st_uid != geteuid() && geteuid() != 0)
		return -EPERM;
	return 0;
}

/* The file's real path, for messages. */
static void fd_path(int fd, char *buf, size_t len, const char *fallback)
{
	char pp[64];
	ssize_t n;

	snprintf(pp, sizeof(pp), "/proc/self/fd/%d", fd);
	n = readlink(pp, buf, len - 1);
	if (n <= 0) {
		snprintf(buf, len, "%s", fallback);
		return;
	}
	buf[n] = 0;
}

/* A descriptor of fd for the client; on failure, the new OFD o goes
 * with the claimed inode (published served or not as ok says). */
static int send_dup(int fd, struct hinode *ino, struct hofd *o, bool ok,
		    int *send_fd)
{
	int ret;

	*send_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (*send_fd >= 0)
		return 0;
	ret = -errno;
	hino_publish(ino, ok);
	hofd_put(o, 1);
	hino_put(ino);
	return ret;
}

/* One more OFD of a served inode. 0, -EAGAIN (look it up again), or
 * -errno. */
static int add_ofd(struct hinode *ino, int flags, struct hofd **ofd,
		   int *send_fd)
{
	struct wtio_file *wf = NULL;
	struct hofd *o;
	int ret;

	pthread_rwlock_rdlock(&ino->io_lock);
	if (!ino->wf || ino->fd < 0) {
		pthread_rwlock_unlock(&ino->io_lock);
		return -EAGAIN;
	}
	ret = hctx_open(ino->fd, O_RDONLY, &wf);
	if (ret)
		goto out;
	o = hofd_new(ino, flags & OFD_FLAGS, wf, &ret);
	if (!o) {
		wtio_close(wf);
		goto out;
	}
	if (flags & O_TRUNC) {
		pthread_rwlock_wrlock(&ino->size_lock);
		ret = wtio_ftruncate(ino->wf, 0);
		pthread_rwlock_unlock(&ino->size_lock);
		if (ret) {
			pthread_rwlock_unlock(&ino->io_lock);
			hofd_put(o, 1);
			return ret;
		}
	}
	*send_fd = fcntl(ino->fd, F_DUPFD_CLOEXEC, 3);
	if (*send_fd < 0) {
		ret = -errno;
		pthread_rwlock_unlock(&ino->io_lock);
		hofd_put(o, 1);
		return ret;
	}
	*ofd = o;
out:
	pthread_rwlock_unlock(&ino->io_lock);
	return ret;
}

/* A file the holder created and cannot serve: an OFD demoted from birth,
 * on a description with the program's flags (the client's first call
 * gets it as HOLDER_DEMOTED). ino is OPENING and is published GONE. */
static int born_demoted(struct hinode *ino, int cfd, int flags,
			struct hofd **ofd, int *send_fd, const char *why)
{
	char pp[64];
	struct hofd *o;
	int fd, ret;

	hdebug("%s: created, not served (%s): passed through", ino->path, why);
	HSTAT_INC(opens_not_served);
	HSTAT_INC(not_served_other);
	snprintf(pp, sizeof(pp), "/proc/self/fd/%d", cfd);
	fd = open(pp, (flags & (OFD_FLAGS & ~O_DIRECT)) | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		fd = fcntl(cfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		ret = -errno;
		goto fail;
	}
	o = hofd_new(ino, flags & OFD_FLAGS, NULL, &ret);
	if (!o) {
		close(fd);
		goto fail;
	}
	o->demoted = true;
	o->demoted_fd = fd;
	/* its position is its kernel description's from birth */
	hshm_detach(o);
	ret = send_dup(fd, ino, o, false, send_fd);
	if (ret)
		return ret;
	*ofd = o;
	ret = 0;
fail:
	hino_publish(ino, false);
	hino_put(ino);
	return ret;
}

/* Created within the last second (the holder's creating open of it may
 * still hold its description, before it notes it: hino_note_recent). */
static bool born_lately(int fd)
{
	struct statx sx;
	struct timespec now;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME | STATX_CTIME, &sx) < 0)
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	if (sx.stx_mask & STATX_BTIME)
		return now.tv_sec - sx.stx_btime.tv_sec <= 1;
	return now.tv_sec - sx.stx_ctime.tv_sec <= 1;
}

/* Set up a new served inode (OPENING, claimed) on the file of pfd
 * (created: pfd is the creating open's O_RDWR description, and is
 * closed here). */
static int setup(struct hinode *ino, int pfd, bool created, int flags,
		 struct hofd **ofd, int *send_fd)
{
	bool want_write = (flags & O_ACCMODE) != O_RDONLY;
	struct wtio_file *owf = NULL;
	struct wtio_file_info info;
	char pp[64], whybuf[512];
	const char *why;
	struct hofd *o;
	int fd, fl, ret;

	if (!created && hfds_short()) {
		ret = -EMFILE;	/* not served: hserve_open */
		goto fail;
	}
	if (created) {
		fd = fcntl(pfd, F_DUPFD_CLOEXEC, 3);
		fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_DIRECT) < 0) {
			if (fd >= 0)
				close(fd);
			ret = born_demoted(ino, pfd, flags, ofd, send_fd,
					   "no O_DIRECT");
			close(pfd);
			return ret;
		}
		ino->writable = true;
	} else {
		snprintf(pp, sizeof(pp), "/proc/self/fd/%d", pfd);
		fd = open(pp, O_RDWR | O_DIRECT | O_CLOEXEC | O_NOCTTY);
		ino->writable = fd >= 0;
		if (fd < 0 && !want_write &&
		    (errno == EACCES || errno == EPERM || errno == EROFS ||
		     errno == ETXTBSY))
			fd = open(pp, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			why = errno == EINVAL ? "no O_DIRECT here" :
			      "the holder cannot open it so";
			ret = not_served(ino->path, why, false);
			goto fail;
		}
	}
	/* pfd is the creating open's description: it must go before the
	 * lease, which only the only description of a file can take */
	if (created)
		close(pfd);
	ret = hlease_take(fd);
	/* The holder closed the file a moment ago (its closer's own
	 * descriptor of the old description goes right after the holder's
	 * answer), or has just created it (the creating open's description
	 * is still open, in the thread that will claim it next): give the
	 * claim up and look again (hserve_open), rather than "open
	 * elsewhere", which would demote the file at the next open. The
	 * old description can outlive every descriptor for a moment too:
	 * an io_uring request's reference to it is put by the thread that
	 * submitted it, after another thread may have seen its completion
	 * (and closed the file); on a loaded machine that thread may wait
	 * long for a CPU. Hence a whole second. */
	if (ret == -EAGAIN && !created &&
	    (hino_recently_closed(ino->dev, ino->ino, RECENT_MS) ||
	     born_lately(fd))) {
		close(fd);
		ret = -EAGAIN;
		goto fail;
	}
	if (ret) {
		why = ret == -EAGAIN ? "open elsewhere" :
		      ret == -EACCES ? "not the file's owner (no lease)" :
		      "no write lease here";
		if (ret == -EAGAIN && hlog_debugging()) {
			hwho_elsewhere(fd, -1, whybuf, sizeof(whybuf));
			why = whybuf;
		}
		if (created) {
			ret = born_demoted(ino, fd, flags, ofd, send_fd, why);
			close(fd);
			return ret;
		}
		close(fd);
		ret = not_served(ino->path, why, ret == -EAGAIN);
		goto fail;
	}
	ret = hctx_open(fd, ino->writable ? O_RDWR : O_RDONLY, &ino->wf);
	if (!ret) {
		ret = hctx_open(fd, O_RDONLY, &owf);
		if (ret) {
			wtio_close(ino->wf);
			ino->wf = NULL;
		}
	}
	if (ret) {
		hlease_drop(fd);
		hdebug("%s: wtio_open: %s", ino->path, wtio_strerror(ret));
		if (created) {
			ret = born_demoted(ino, fd, flags, ofd, send_fd,
					   "wtio cannot open it");
			close(fd);
			return ret;
		}
		close(fd);
		ret = not_served(ino->path, "wtio cannot open it", false);
		goto fail;
	}
	ino->fd = fd;
	ino->rec = hrec_add(ino->path, (uint64_t)ino->dev, (uint64_t)ino->ino);
	ino->block_size = wtio_file_info(ino->wf, &info) == 0 ?
			  info.block_size : 4096;
	if ((flags & O_TRUNC) && !created) {
		ret = wtio_ftruncate(ino->wf, 0);
		if (ret)
			goto undo;
	}
	o = hofd_new(ino, flags & OFD_FLAGS, owf, &ret);
	if (!o)
		goto undo;
	owf = NULL;
	ret = send_dup(fd, ino, o, true, send_fd);
	if (ret)
		return ret;
	*ofd = o;
	HSTAT_INC(opens_served);
	hdebug("%s: served (flags %#x)", ino->path, flags);
	hino_publish(ino, true);
	hino_put(ino);
	/* a break that began before the publication found nothing to
	 * demote: the lease thread's own test, made here */
	if (hlease_broken(fd))
		hlease_kick();
	return 0;
undo:
	if (owf)
		wtio_close(owf);
	pthread_rwlock_wrlock(&ino->io_lock);
	hino_close_handles(ino);
	pthread_rwlock_unlock(&ino->io_lock);
fail:
	hino_publish(ino, false);
	hino_put(ino);
	return ret;
}

/* An open that created the file failed after all: the file goes, as a
 * failed open(2) creates nothing (if it is still the one created). */
static void uncreate(int dirfd, const char *path, const struct stat *st)
{
	struct stat now;

	if (fstatat(dirfd, path, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    now.st_dev == st->st_dev && now.st_ino == st->st_ino)
		unlinkat(dirfd, path, 0);
}

static int serve_open(int dirfd, const char *path, int flags, mode_t mode,
		      struct hofd **ofd, int *send_fd)
{
	bool excl = (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
	bool created = false, claimed;
	int acc = flags & O_ACCMODE, pfd = -1, ret, tries;
	char real_path[PATH_MAX];
	struct hinode *ino;
	struct stat st;

	*send_fd = -1;
	*ofd = NULL;
	if (acc == O_ACCMODE || (flags & (O_PATH | O_DIRECTORY)) ||
	    (flags & __O_TMPFILE) == __O_TMPFILE)
		return not_served(path, "O_PATH, O_DIRECTORY or O_TMPFILE", false);
	if ((flags & O_TRUNC) && acc == O_RDONLY)
		return not_served(path, "O_TRUNC on a read-only open", false);
	/* The holder's descriptors are not the program's: a holder short of
	 * them serves no new file (fds.c), and the program's own open gives
	 * the kernel's answer. Before anything is created; a file that
	 * exists is looked at in setup, as a served one costs none. */
	if ((flags & O_CREAT) && hfds_short())
		return -EMFILE;
	for (tries = 0;; tries++) {
		pfd = openat(dirfd, path, O_PATH | O_CLOEXEC |
			     ((excl || (flags & O_NOFOLLOW)) ? O_NOFOLLOW : 0));
		if (pfd >= 0)
			break;
		if (errno != ENOENT || !(flags & O_CREAT))
			return -errno;
		if (tries)	/* a dangling symlink: the client follows it */
			return not_served(path, "created elsewhere meanwhile, or a dangling symlink",
					  false);
		pfd = openat(dirfd, path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC |
			     O_NOCTTY | (flags & O_NOFOLLOW), mode);
		if (pfd >= 0) {
			created = true;
			break;
		}
		if (errno != EEXIST || excl)
			return -errno;
	}
	if (fstat(pfd, &st) < 0) {
		ret = -errno;
		close(pfd);
		return ret;
	}
	if (created)	/* another open of it may claim it first (setup) */
		hino_note_recent(st.st_dev, st.st_ino);
	if (!created) {
		if (excl) {
			close(pfd);
			return -EEXIST;
		}
		if (!S_ISREG(st.st_mode)) {
			close(pfd);
			return not_served(path, "not a regular file", false);
		}
		ret = may_open(pfd, &st, flags);
		if (ret) {
			close(pfd);
			return ret;
		}
	}
	fd_path(pfd, real_path, sizeof(real_path), path);
	tries = 0;
	for (;;) {
		ino = hino_get_or_claim(st.st_dev, st.st_ino, real_path,
					&claimed);
		if (!ino) {
			ret = -ENOMEM;
			break;
		}
		if (claimed) {
			ret = setup(ino, pfd, created, flags, ofd, send_fd);
			if (created)
				pfd = -1;	/* setup closed it */
			if (ret != -EAGAIN || created)
				break;
			/* a close or creation of a moment ago (setup) */
			if (++tries > RECENT_MS) {
				char why[512] = "open elsewhere";

				if (hlog_debugging())
					hwho_elsewhere(pfd, -1, why, sizeof(why));
				ret = not_served(real_path, why, true);
				break;
			}
			usleep(1000);
			continue;
		}
		if ((acc != O_RDONLY) && !ino->writable) {
			hino_put(ino);
			ret = not_served(real_path, "served read-only", false);
			break;
		}
		ret = add_ofd(ino, flags, ofd, send_fd);
		hino_put(ino);
		if (ret != -EAGAIN)
			break;
	}
	if (pfd >= 0)
		close(pfd);
	if (ret < 0 && created)
		uncreate(dirfd, path, &st);
	if (ret == 0 && !claimed)
		HSTAT_INC(opens_served);
	return ret;
}

int hserve_open(int dirfd, const char *path, int flags, mode_t mode,
		struct hofd **ofd, int *send_fd)
{
	int ret = serve_open(dirfd, path, flags, mode, ofd, send_fd);

	/* Only the holder's own descriptors ran out (EMFILE), or the
	 * system's (ENFILE), at any step: nothing is left created or
	 * changed that the program's own open would not do again (a file
	 * the holder created is gone again, uncreate; an O_TRUNC made is
	 * the program's own open's too), so the program opens it with the
	 * kernel, whose answer it gets; the program's own lack of a
	 * descriptor for the reply is told by the client (remote_open). */
	if (ret == -EMFILE || ret == -ENFILE) {
		HSTAT_INC(not_served_nofds);
		ret = not_served(path, ret == -EMFILE ?
				 "the holder is short of descriptors" :
				 "no descriptor left in the system (ENFILE)",
				 false);
	}
	return ret;
}
