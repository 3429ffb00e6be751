/* SPDX-License-Identifier: MIT */
/*
 * Every live timeline and fence, for the debug dump. One lock, taken for a
 * list insert or removal at creation and destruction only.
 */
#include "core.h"
#include "host.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fl_timeline *timelines;
static struct fl_fence *fences;

void fl__registry_lock(void)
{
	pthread_mutex_lock(&registry_lock);
}

void fl__registry_unlock(void)
{
	pthread_mutex_unlock(&registry_lock);
}

struct fl_timeline *fl__registry_timelines(void)
{
	return timelines;
}

struct fl_fence *fl__registry_fences(void)
{
	return fences;
}

void fl__registry_add_timeline(struct fl_timeline *tl)
{
	pthread_mutex_lock(&registry_lock);
	tl->reg_prev = NULL;
	tl->reg_next = timelines;
	if (timelines)
		timelines->reg_prev = tl;
	timelines = tl;
	pthread_mutex_unlock(&registry_lock);
}

void fl__registry_del_timeline(struct fl_timeline *tl)
{
	pthread_mutex_lock(&registry_lock);
	if (tl->reg_prev)
		tl->reg_prev->reg_next = tl->reg_next;
	else
		timelines = tl->reg_next;
	if (tl->reg_next)
		tl->reg_next->reg_prev = tl->reg_prev;
	pthread_mutex_unlock(&registry_lock);
}

void fl__registry_add_fence(struct fl_fence *f)
{
	pthread_mutex_lock(&registry_lock);
	f->reg_prev = NULL;
	f->reg_next = fences;
	if (fences)
		fences->reg_prev = f;
	fences = f;
	f->published = true;
	pthread_mutex_unlock(&registry_lock);
}

void fl__registry_del_fence(struct fl_fence *f)
{
	pthread_mutex_lock(&registry_lock);
	if (f->reg_prev)
		f->reg_prev->reg_next = f->reg_next;
	else
		fences = f->reg_next;
	if (f->reg_next)
		f->reg_next->reg_prev = f->reg_prev;
	f->published = false;
	pthread_mutex_unlock(&registry_lock);
}

void fl__timeline_foreach(void (*fn)(struct fl_timeline *tl, void *arg), void *arg)
{
	pthread_mutex_lock(&registry_lock);
	for (struct fl_timeline *tl = timelines; tl; tl = tl->reg_next)
		fn(tl, arg);
	pthread_mutex_unlock(&registry_lock);
}

void fl__fence_foreach(void (*fn)(struct fl_fence *f, void *arg), void *arg)
{
	pthread_mutex_lock(&registry_lock);
	for (struct fl_fence *f = fences; f; f = f->reg_next)
		fn(f, arg);
	pthread_mutex_unlock(&registry_lock);
}
