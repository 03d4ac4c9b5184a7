/* tformer: Optimisation and training -- an umbrella over optim.h, schedule.h,
 * task.h and trainer.h, and the model families' headers (each family's task
 * lives in its own header). The library includes the narrow headers, never this one. */
#ifndef TFORMER_TRAIN_H
#define TFORMER_TRAIN_H

#include "optim.h"
#include "schedule.h"
#include "task.h"
#include "train_config.h"
#include "trainer.h"
#include "plot.h"
#include "config.h"
#include "data.h"
#include "bert.h"
#include "images.h"
#include "vit.h"
#include "vivit.h"
#include "swin.h"
#include "gpt.h"
#include "rnn_seq2seq.h"
#include "seq2seq.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "continual.h"

#endif /* TFORMER_TRAIN_H */
